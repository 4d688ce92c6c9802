package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"myco.dev/sessions"
	"myco.dev/views"
)

// maxRecentDirs bounds the directories used lately that a page offers.
const maxRecentDirs = 8

// newSessionPage asks where a new session works (?cwd= fills the field in: the header's
// New session sends the current session's directory), and with which model.
func (s *server) newSessionPage(w http.ResponseWriter, r *http.Request) error {
	cwd := r.URL.Query().Get("cwd")
	if cwd == "" {
		cwd = s.Dir
	}
	return s.renderNewSession(w, r, http.StatusOK, cwd, r.URL.Query().Get("model"), "")
}

// renderNewSession renders the new-session page with the directory cwd in its field and,
// when it was refused, why.
func (s *server) renderNewSession(w http.ResponseWriter, r *http.Request, status int, cwd, model, refusal string) error {
	if model == "" || !s.known(model) {
		model = s.Default
	}
	v := views.NewSessionView{Chrome: s.chrome("New session", "sessions"), Action: s.base + "/s", CompleteURL: s.base + "/dirs",
		Cwd: cwd, Error: refusal, Recent: s.recentDirs(r.Context(), ""), Models: s.modelKeys(), Model: model}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	return views.NewSessionPage(v).Render(r.Context(), w)
}

// recentDirs are the directories to offer: the server's own, then those of the sessions,
// newest first, each once; current is marked as chosen.
func (s *server) recentDirs(ctx context.Context, current string) []views.DirChoice {
	var dirs []string
	if s.Dir != "" {
		dirs = append(dirs, s.Dir)
	}
	if list, err := s.Sessions.List(ctx, sessions.ListOptions{All: true, IncludeHidden: true}); err == nil {
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

// newSession creates a session (form fields cwd, or pick, a directory chosen from those
// offered; model, optional) and opens it. A directory that cannot be used is refused on
// the new-session page, with the directory as typed and the reason at the field.
func (s *server) newSession(w http.ResponseWriter, r *http.Request) error {
	if err := form(w, r); err != nil {
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
	id, err := s.Sessions.Create(r.Context(), sessions.CreateOptions{Model: key, Cwd: cwd})
	if de, ok := errors.AsType[*sessions.DirError](err); ok {
		return s.renderNewSession(w, r, http.StatusBadRequest, cwd, key, "This directory "+de.Problem+": choose another.")
	}
	if err != nil {
		return err
	}
	return goTo(w, r, s.sessionURL(id))
}

// sessionsURL is the sessions page filtered by directory dir.
func (s *server) sessionsURL(dir string) string {
	return s.base + "/?cwd=" + url.QueryEscape(dir)
}
