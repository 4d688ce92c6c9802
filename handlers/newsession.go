package handlers

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"myco.dev/agent/model"
	"myco.dev/internal/humanize"
	"myco.dev/sessions"
	"myco.dev/views"
)

// maxRecentDirs bounds the directories used lately that a page offers.
const maxRecentDirs = 8

// newSessionPage is the composer of a session not yet made: the directory it will work in
// (?cwd=, which the header's New session sends from a session page; else the one used
// last) and its model (?model=) beside the message. Nothing is written until Send.
func (s *server) newSessionPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	cwd := q.Get("cwd")
	if cwd == "" {
		cwd = s.lastDir(r.Context())
	}
	return s.renderNewSession(w, r, http.StatusOK, newPage{Cwd: cwd, Model: q.Get("model")})
}

// newPage is what the new-session page shows: the fields as typed, and what was wrong.
type newPage struct {
	Cwd, Model, Text        string
	Error, CwdError, Notice string
}

// renderNewSession renders the new-session page.
func (s *server) renderNewSession(w http.ResponseWriter, r *http.Request, status int, p newPage) error {
	if p.Model == "" || !s.known(p.Model) {
		p.Model = s.Default
	}
	v := views.NewSessionView{Chrome: s.chrome("New session", "sessions"), Action: s.base + "/s", CompleteURL: s.base + "/dirs",
		Cwd: p.Cwd, CwdError: p.CwdError, Recent: s.recentDirs(r.Context(), p.Cwd), Models: s.modelChoices(), Model: p.Model,
		Text: p.Text, Error: p.Error, Notice: p.Notice}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	return views.NewSessionPage(v).Render(r.Context(), w)
}

// lastDir is the directory of the session used last, else the server's.
func (s *server) lastDir(ctx context.Context) string {
	if list, err := s.Sessions.List(ctx, sessions.ListOptions{All: true}); err == nil {
		for _, l := range list {
			if l.Cwd != "" {
				return l.Cwd
			}
		}
	}
	return s.Dir
}

// modelChoices are the catalog's models as a person chooses them: each key with its
// context window.
func (s *server) modelChoices() []views.ModelChoice {
	out := make([]views.ModelChoice, 0, len(s.Models))
	for _, m := range s.Models {
		label := m.Key
		if m.ContextWindow > 0 {
			label += " · " + humanize.Tokens(m.ContextWindow) + " context"
		}
		out = append(out, views.ModelChoice{Key: m.Key, Label: label})
	}
	return out
}

// recentDirs are the directories to offer: the server's own, then those of the sessions,
// newest first, each once; current is marked as chosen.
func (s *server) recentDirs(ctx context.Context, current string) []views.DirChoice {
	list, _ := s.Sessions.List(ctx, sessions.ListOptions{All: true, IncludeHidden: true})
	return s.dirsOf(list, current)
}

// dirsOf is recentDirs from list, a listing of every session.
func (s *server) dirsOf(list []sessions.Listed, current string) []views.DirChoice {
	var dirs []string
	if s.Dir != "" {
		dirs = append(dirs, s.Dir)
	}
	{
		for _, l := range list {
			if l.Cwd != "" && !slices.Contains(dirs, l.Cwd) {
				dirs = append(dirs, l.Cwd)
			}
			if len(dirs) >= maxRecentDirs {
				break
			}
		}
	}
	out := make([]views.DirChoice, 0, len(dirs))
	for _, d := range dirs {
		c := views.DirChoice{Path: d, Label: shortDir(d, s.Home), Current: d == current}
		if d == s.Dir {
			c.Note = "the server's directory"
		}
		out = append(out, c)
	}
	return out
}

// dirOptions completes a typed directory (?cwd=): the directories whose path starts with
// it, as the options of the page's datalist. Hidden directories are offered only once a
// dot is typed. A path that is not absolute, or a parent that cannot be read, has none.
func (s *server) dirOptions(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	return views.DirOptions(completeDir(r.URL.Query().Get("cwd"), 50)).Render(r.Context(), w)
}

// completeDir returns at most max directories that complete typed, an absolute path: the
// subdirectories of typed when it ends in "/", else those of its parent whose name starts
// with its last element; each ends in "/" so that the next one can be typed on.
func completeDir(typed string, max int) []string {
	if !filepath.IsAbs(typed) {
		return nil
	}
	var out []string
	for _, c := range completePath(typed, "", "", true, max) {
		out = append(out, c.Path)
	}
	return out
}

// newSession creates a session (form fields cwd, or pick, a directory; model, optional)
// and sends its first message (text and files), then opens it. The page's form always
// has a message: one that is empty, or refused, or a directory that cannot be used,
// shows the page again with the reason and all that was typed, and nothing is written.
// A post without a text field at all (a script's) makes an empty session, as it always did.
func (s *server) newSession(w http.ResponseWriter, r *http.Request) error {
	if err := uploadForm(w, r); err != nil {
		return err
	}
	if err := s.configured(); err != nil {
		return err
	}
	key := r.PostForm.Get("model")
	if key != "" && !s.known(key) {
		return httpError(http.StatusBadRequest, "There is no model "+quote(key)+" in the catalog.")
	}
	cwd := r.PostForm.Get("pick")
	if cwd == "" {
		cwd = strings.TrimSpace(r.PostForm.Get("cwd"))
	}
	if cwd == "~" || strings.HasPrefix(cwd, "~/") && s.Home != "" {
		cwd = filepath.Join(s.Home, strings.TrimPrefix(cwd, "~"))
	}
	page := newPage{Cwd: cwd, Model: key, Text: r.PostForm.Get("text")}
	refuse := func(msg string) error {
		page.Error = msg
		return s.renderNewSession(w, r, http.StatusBadRequest, page)
	}
	var input []model.Part
	if r.PostForm.Has("text") {
		if strings.TrimSpace(page.Text) == "/help" {
			page.Text, page.Notice = "", composerHelp
			return s.renderNewSession(w, r, http.StatusOK, page)
		}
		if cwd != "" {
			if _, err := sessions.CheckDir(cwd); err != nil {
				if de, ok := errors.AsType[*sessions.DirError](err); ok {
					page.CwdError = "This directory " + de.Problem + ": choose another."
					return s.renderNewSession(w, r, http.StatusBadRequest, page)
				}
				return err
			}
		}
		var err error
		if input, err = s.message(r, page.Text, cwd, cmp.Or(key, s.Default)); err != nil {
			return refuse(err.Error())
		}
	}
	id, err := s.Sessions.Create(r.Context(), sessions.CreateOptions{Model: key, Cwd: cwd})
	if de, ok := errors.AsType[*sessions.DirError](err); ok {
		page.CwdError = "This directory " + de.Problem + ": choose another."
		return s.renderNewSession(w, r, http.StatusBadRequest, page)
	}
	if err != nil {
		return err
	}
	if input != nil {
		if _, err := s.send(r, id, input); err != nil {
			// The session is made but its message was not taken: its page shows why,
			// with the message in its composer to send again.
			s.Log.Warn("first message refused", "session_id", id, "err", err)
			why := s.errors.Answer(r, err).Message
			return goTo(w, r, s.sessionURL(id)+"?draft="+url.QueryEscape(page.Text)+"&why="+url.QueryEscape(why))
		}
	}
	return goTo(w, r, s.sessionURL(id))
}

// sessionsURL is the sessions page filtered by directory dir.
func (s *server) sessionsURL(dir string) string {
	return s.base + "/?cwd=" + url.QueryEscape(dir)
}
