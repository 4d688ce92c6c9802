package handlers

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"myco.dev/views"
	"myco.dev/workspace"
)

// sessionFiles serves the read-only viewer of a session's directory at
// /profiles/NAME/s/ID/files/PATH, with the workspace viewer's rules (an os.Root at the
// directory: no traversal, no symlink out of it, regular files and directories only, no
// hidden names, an allow-listed content type, documents under the sandboxing policy). The
// links of the session's answers to its files land here. A directory removed since is a
// 404 that says so; the session's page still opens.
func (s *server) sessionFiles(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	sess, _, err := s.Sessions.Snapshot(r.Context(), id)
	if err != nil {
		return err
	}
	if info, err := os.Stat(sess.Cwd); err != nil || !info.IsDir() {
		return httpError(http.StatusNotFound, "This session's directory "+quote(sess.Cwd)+" no longer exists, so none of its files can be shown; the session's history stays readable.")
	}
	if why := s.unbrowsable(sess.Cwd); why != "" {
		return httpError(http.StatusForbidden, "This session works in "+quote(sess.Cwd)+", which the file viewer does not browse: "+why+
			". The session still works there; only this viewer refuses. Start a session in a project's own directory to browse its files.")
	}
	var deny []string
	if s.MycoHome != "" {
		deny = append(deny, s.MycoHome)
	}
	files, err := workspace.OpenFiles(sess.Cwd, deny...)
	if err != nil {
		return err
	}
	return s.files(w, r, viewer{files: files, url: s.filesURL(id), root: shortDir(sess.Cwd, s.Home), where: quote(sess.Cwd),
		nav: "sessions", back: s.sessionURL(id), session: s.sessionURL(id)})
}

// unbrowsable says why the viewer of a session's directory does not browse dir, "" when
// it does: the root of the file system, the user's home, or a directory above it would
// make the viewer a browser of every file the user has; myco's home (MYCO_HOME) holds
// myco's sessions, config and credentials. dir is compared as written and with its
// symlinks resolved.
func (s *server) unbrowsable(dir string) string {
	dirs := []string{filepath.Clean(dir)}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dirs[0] {
		dirs = append(dirs, real)
	}
	resolved := func(p string) []string {
		if p == "" {
			return nil
		}
		out := []string{filepath.Clean(p)}
		if real, err := filepath.EvalSymlinks(p); err == nil && real != out[0] {
			out = append(out, real)
		}
		return out
	}
	for _, d := range dirs {
		if d == "/" {
			return "it is the root of the file system"
		}
		for _, h := range resolved(s.Home) {
			if h != "/" && (d == h || inside(h, d)) {
				return "it is your home directory, or holds it"
			}
		}
		for _, m := range resolved(s.MycoHome) {
			if d == m || inside(d, m) {
				return "it is inside myco's own directory (MYCO_HOME), which holds its sessions, config and credentials"
			}
		}
	}
	return ""
}

// inside reports whether p is strictly inside directory dir.
func inside(p, dir string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// filesURL is the route of session id's directory viewer.
func (s *server) filesURL(id string) string { return s.sessionURL(id) + "files/" }

// mdOptionsFor are the Markdown options of session id's transcript, whose directory is
// cwd: workspace paths link to the workspace viewer, and the session's relative links,
// paths under cwd and path:line references to its directory viewer, when the viewer
// browses cwd (see [server.unbrowsable]).
func (s *server) mdOptionsFor(id, cwd string) views.MarkdownOptions {
	o := s.mdOptions()
	if cwd != "" && s.unbrowsable(cwd) == "" {
		o.ProjectDir, o.ProjectURL = cwd, s.filesURL(id)
	}
	return o
}

// rowDirRunes is how long a directory may read in a row of the session list before its
// start gives way: the last parts of a path (the project) tell sessions apart, its
// start (/home/me/src/…) rarely does.
const rowDirRunes = 32

// tailDir is label (a [shortDir]) cut to its last parts when it is longer than max runes:
// "…/org/project". The last part is kept whole, however long.
func tailDir(label string, max int) string {
	if utf8.RuneCountInString(label) <= max {
		return label
	}
	parts := strings.Split(strings.TrimSuffix(label, "/"), "/")
	out := parts[len(parts)-1]
	for i := len(parts) - 2; i >= 0; i-- {
		cand := parts[i] + "/" + out
		if utf8.RuneCountInString(cand)+2 > max {
			break
		}
		out = cand
	}
	return "…/" + out
}

// shortDir is dir as a person reads it: under home, with ~ for it.
func shortDir(dir, home string) string {
	if home != "" && home != "/" {
		if dir == home {
			return "~"
		}
		if rest, ok := strings.CutPrefix(dir, strings.TrimSuffix(home, "/")+"/"); ok {
			return filepath.Join("~", rest)
		}
	}
	return dir
}
