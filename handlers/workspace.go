package handlers

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"myco.dev/internal/web"
	"myco.dev/static"
	"myco.dev/views"
	"myco.dev/workspace"
)

// maxDocument bounds a Markdown document the viewer renders; a longer one is paged as
// text.
const maxDocument = views.MaxMarkdownBytes

// viewer is one read-only file viewer: the profile's workspace, or a session's directory.
// Both read through a [workspace.Files] capability, with the same rules.
type viewer struct {
	files *workspace.Files
	url   string // its route, ending in "/"
	root  string // the first crumb's label
	where string // the directory as a sentence names it, for a 404
	nav   string // the navigation item of its pages
	back  string // where a document's brand link goes
	// session is the page of the session whose directory this is, "" for the workspace:
	// every page of the viewer leads back to it.
	session string
}

// backLink leads back to the session of a session's viewer; nil for the workspace.
func (v viewer) backLink() *views.Link {
	if v.session == "" {
		return nil
	}
	return &views.Link{Title: "Back to the session", URL: v.session}
}

// workspaceViewer is the viewer of the profile's workspace.
func (s *server) workspaceViewer() viewer {
	return viewer{files: s.Workspace, url: s.base + "/workspace/", root: "workspace", where: "the workspace", nav: "workspace", back: s.base + "/workspace/"}
}

// workspace serves the read-only workspace viewer at /profiles/NAME/workspace/PATH: a
// directory listing, a Markdown document rendered under a sandboxing content policy, a
// page of a text file, an image, or a download; ?raw=1 serves a file's bytes with a type
// from the allow-list. Every path goes through the workspace capability: traversal,
// symlinks out of the workspace, special files and hidden names all answer one 404.
func (s *server) workspace(w http.ResponseWriter, r *http.Request) error {
	if s.Workspace == nil {
		return errNotFound
	}
	return s.files(w, r, s.workspaceViewer())
}

// files serves the viewer v at the path chi matched: see [server.workspace]. A text page
// numbers its lines (#L42 anchors); ?line=N opens the page that holds line N.
func (s *server) files(w http.ResponseWriter, r *http.Request, v viewer) error {
	name := chi.URLParam(r, "*")
	if r.URL.RawPath != "" {
		// chi routes on the escaped path when the URL's escaping is not Go's default (the
		// viewer's links escape ';' and ',' in names, which a path need not), so the
		// parameter is still escaped.
		n, err := url.PathUnescape(name)
		if err != nil {
			return v.missing(name)
		}
		name = n
	}
	if strings.HasSuffix(name, "/") {
		name = strings.TrimSuffix(name, "/")
	}
	item, err := v.files.Stat(name)
	if err != nil {
		return v.notFound(name, err)
	}
	if item.IsDir {
		if name != "" && !strings.HasSuffix(r.URL.Path, "/") {
			// Escaped: a name may hold '?' or '#', and raw controls do not belong in a header.
			web.Redirect(w, r, r.URL.EscapedPath()+"/", http.StatusMovedPermanently)
			return nil
		}
		return s.filesDir(w, r, v, name)
	}
	if r.URL.Query().Get("raw") == "1" {
		return s.filesRaw(w, r, v, name)
	}
	f, err := v.files.Open(name)
	if err != nil {
		return v.notFound(name, err)
	}
	defer f.Close()
	page := views.WorkspaceView{Chrome: s.chrome(path.Base(name), v.nav), Path: name, Crumbs: v.crumbs(name),
		RawURL: v.fileURL(name) + "?raw=1", Size: size(f.Info.Size), Back: v.backLink()}
	switch f.Kind {
	case workspace.KindMarkdown:
		if f.Info.Size <= maxDocument && r.URL.Query().Get("line") == "" {
			return s.document(w, r, v, name, f)
		}
		fallthrough
	case workspace.KindText:
		n := 1
		q := r.URL.Query()
		switch p, line := q.Get("page"), q.Get("line"); {
		case p != "":
			if n, err = strconv.Atoi(p); err != nil || n < 1 {
				return httpError(http.StatusBadRequest, "page must be a page number from 1.")
			}
		case line != "":
			l, err := strconv.Atoi(line)
			if err != nil || l < 1 {
				return httpError(http.StatusBadRequest, "line must be a line number from 1.")
			}
			if n, err = v.files.PageOf(name, l); err != nil {
				return v.notFound(name, err)
			}
		}
		pg, err := v.files.Page(name, n)
		if err != nil {
			return v.notFound(name, err)
		}
		page.Kind, page.Text, page.Page, page.Pages = "text", pg.Text, pg.N, pg.Count
		page.Code = views.CodeLines(name, pg.Text, pg.Line)
		if pg.N > 1 {
			page.PrevURL = v.fileURL(name) + "?page=" + strconv.Itoa(pg.N-1)
		}
		if pg.N < pg.Count {
			page.NextURL = v.fileURL(name) + "?page=" + strconv.Itoa(pg.N+1)
		}
	case workspace.KindImage:
		page.Kind = "image"
	default:
		page.Kind = "download"
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return views.WorkspacePage(page).Render(r.Context(), w)
}

func (s *server) filesDir(w http.ResponseWriter, r *http.Request, v viewer, name string) error {
	l, err := v.files.ReadDir(name)
	if err != nil {
		return v.notFound(name, err)
	}
	title := v.root
	if name != "" {
		title = path.Base(name) + "/"
	} else if v.root == "workspace" {
		title = "Workspace"
	}
	page := views.WorkspaceView{Chrome: s.chrome(title, v.nav), Path: name, Crumbs: v.crumbs(name), Kind: "dir", More: l.More, Back: v.backLink()}
	for _, it := range l.Items {
		u := v.fileURL(path.Join(name, it.Name))
		display := it.Name
		if it.IsDir {
			u += "/"
			display += "/"
		}
		page.Dir = append(page.Dir, views.WorkspaceItem{Name: display, URL: u, Size: sizeOf(it), Modified: it.ModTime.Local().Format("2006-01-02 15:04"), IsDir: it.IsDir})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return views.WorkspacePage(page).Render(r.Context(), w)
}

func sizeOf(it workspace.Item) string {
	if it.IsDir {
		return ""
	}
	return size(it.Size)
}

// document renders a Markdown document on its own page, under the document policy: a
// sandbox without same-origin, so nothing in it runs with the application's privileges,
// and nothing but our styles and same-origin images loads. Its relative links stay in
// its viewer.
func (s *server) document(w http.ResponseWriter, r *http.Request, v viewer, name string, f *workspace.File) error {
	src, err := io.ReadAll(io.LimitReader(f, maxDocument+1))
	if err != nil {
		return err
	}
	dir := path.Dir(name)
	if dir == "." {
		dir = ""
	}
	page := views.DocumentView{Title: path.Base(name), Path: name, Crumbs: v.crumbs(name), RawURL: v.fileURL(name) + "?raw=1",
		BackURL: v.back,
		Body:    views.Markdown(string(src), views.MarkdownOptions{WorkspaceDir: v.files.Dir(), WorkspaceURL: v.url, WorkspaceRawQuery: "raw=1", DocDir: dir})}
	for _, n := range []string{static.AppCSS, static.SyntaxCSS} {
		if u := s.Assets.URL(n); u != "" {
			page.CSS = append(page.CSS, u)
		}
	}
	h := w.Header()
	h.Set("Content-Security-Policy", documentCSP)
	h.Set("Content-Type", "text/html; charset=utf-8")
	return views.DocumentPage(page).Render(r.Context(), w)
}

// filesRaw serves a file's bytes with its allow-listed type (never HTML), ranges
// supported, under the document policy; anything not shown inline is an attachment.
func (s *server) filesRaw(w http.ResponseWriter, r *http.Request, v viewer, name string) error {
	f, err := v.files.Open(name)
	if errors.Is(err, workspace.ErrIsDir) {
		return v.missing(name)
	}
	if err != nil {
		return v.notFound(name, err)
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", f.Type)
	h.Set("Content-Security-Policy", documentCSP)
	switch f.Kind {
	case workspace.KindDownload:
		h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(path.Base(name)))
	case workspace.KindImage:
		// A workspace document is served sandboxed, so its requests come from an opaque
		// origin: its images must be loadable cross-origin (an image is not readable by
		// another origin anyway).
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	}
	http.ServeContent(w, r, "", f.Info.ModTime, f)
	return nil
}

// notFound is err as an answer: a refusal of the capability (a missing file, a name it
// does not show) is a 404 that names the path; anything else is err.
func (v viewer) notFound(name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return v.missing(name)
	}
	return err
}

// missing is the 404 of a path the viewer does not show, naming it.
func (v viewer) missing(name string) error {
	return httpError(http.StatusNotFound, fmt.Sprintf("There is no file %s in %s: it was moved or removed, or it is one the viewer does not show (a hidden name, a link out of the directory, a special file).",
		quote("/"+name), v.where))
}

// fileURL is the viewer's URL of path name, escaped per segment.
func (v viewer) fileURL(name string) string {
	segs := strings.Split(name, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return v.url + strings.Join(segs, "/")
}

// crumbs is the path to name, each step a link but the last.
func (v viewer) crumbs(name string) []views.Link {
	out := []views.Link{{Title: v.root, URL: v.url}}
	if name == "" {
		out[0].URL = ""
		return out
	}
	segs := strings.Split(name, "/")
	for i, seg := range segs {
		l := views.Link{Title: seg}
		if i < len(segs)-1 {
			l.URL = v.fileURL(strings.Join(segs[:i+1], "/")) + "/"
		}
		out = append(out, l)
	}
	return out
}

func size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
