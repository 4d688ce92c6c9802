package handlers

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"myco.dev/static"
	"myco.dev/views"
	"myco.dev/workspace"
)

// maxDocument bounds a Markdown document the viewer renders; a longer one is paged as
// text.
const maxDocument = views.MaxMarkdownBytes

// workspace serves the read-only workspace viewer at /profiles/NAME/workspace/PATH: a
// directory listing, a Markdown document rendered under a sandboxing content policy, a
// page of a text file, an image, or a download; ?raw=1 serves a file's bytes with a type
// from the allow-list. Every path goes through the workspace capability: traversal,
// symlinks out of the workspace, special files and hidden names all answer one 404.
func (s *server) workspace(w http.ResponseWriter, r *http.Request) error {
	if s.Workspace == nil {
		return errNotFound
	}
	name := chi.URLParam(r, "*")
	if r.URL.RawPath != "" {
		// chi routes on the escaped path when the URL's escaping is not Go's default (the
		// viewer's links escape ';' and ',' in names, which a path need not), so the
		// parameter is still escaped.
		n, err := url.PathUnescape(name)
		if err != nil {
			return errNotFound
		}
		name = n
	}
	if strings.HasSuffix(name, "/") {
		name = strings.TrimSuffix(name, "/")
	}
	item, err := s.Workspace.Stat(name)
	if err != nil {
		return err
	}
	if item.IsDir {
		if name != "" && !strings.HasSuffix(r.URL.Path, "/") {
			// Escaped: a name may hold '?' or '#', and raw controls do not belong in a header.
			http.Redirect(w, r, r.URL.EscapedPath()+"/", http.StatusMovedPermanently)
			return nil
		}
		return s.workspaceDir(w, r, name)
	}
	if r.URL.Query().Get("raw") == "1" {
		return s.workspaceRaw(w, r, name)
	}
	f, err := s.Workspace.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	v := views.WorkspaceView{Chrome: s.chrome(path.Base(name), "workspace"), Path: name, Crumbs: s.crumbs(name),
		RawURL: s.fileURL(name) + "?raw=1", Size: size(f.Info.Size)}
	switch f.Kind {
	case workspace.KindMarkdown:
		if f.Info.Size <= maxDocument {
			return s.document(w, r, name, f)
		}
		fallthrough
	case workspace.KindText:
		n := 1
		if p := r.URL.Query().Get("page"); p != "" {
			if n, err = strconv.Atoi(p); err != nil || n < 1 {
				return httpError(http.StatusBadRequest, "page must be a page number from 1.")
			}
		}
		pg, err := s.Workspace.Page(name, n)
		if err != nil {
			return err
		}
		v.Kind, v.Text, v.Page, v.Pages = "text", pg.Text, pg.N, pg.Count
		v.Code = views.Code(name, pg.Text)
		if pg.N > 1 {
			v.PrevURL = s.fileURL(name) + "?page=" + strconv.Itoa(pg.N-1)
		}
		if pg.N < pg.Count {
			v.NextURL = s.fileURL(name) + "?page=" + strconv.Itoa(pg.N+1)
		}
	case workspace.KindImage:
		v.Kind = "image"
	default:
		v.Kind = "download"
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return views.WorkspacePage(v).Render(r.Context(), w)
}

func (s *server) workspaceDir(w http.ResponseWriter, r *http.Request, name string) error {
	l, err := s.Workspace.ReadDir(name)
	if err != nil {
		return err
	}
	title := "Workspace"
	if name != "" {
		title = path.Base(name) + "/"
	}
	v := views.WorkspaceView{Chrome: s.chrome(title, "workspace"), Path: name, Crumbs: s.crumbs(name), Kind: "dir", More: l.More}
	for _, it := range l.Items {
		u := s.fileURL(path.Join(name, it.Name))
		display := it.Name
		if it.IsDir {
			u += "/"
			display += "/"
		}
		v.Dir = append(v.Dir, views.WorkspaceItem{Name: display, URL: u, Size: sizeOf(it), Modified: it.ModTime.Local().Format("2006-01-02 15:04"), IsDir: it.IsDir})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return views.WorkspacePage(v).Render(r.Context(), w)
}

func sizeOf(it workspace.Item) string {
	if it.IsDir {
		return ""
	}
	return size(it.Size)
}

// document renders a Markdown document on its own page, under the document policy: a
// sandbox without same-origin, so nothing in it runs with the application's privileges,
// and nothing but our styles and same-origin images loads.
func (s *server) document(w http.ResponseWriter, r *http.Request, name string, f *workspace.File) error {
	src, err := io.ReadAll(io.LimitReader(f, maxDocument+1))
	if err != nil {
		return err
	}
	dir := path.Dir(name)
	if dir == "." {
		dir = ""
	}
	v := views.DocumentView{Title: path.Base(name), Path: name, Crumbs: s.crumbs(name), RawURL: s.fileURL(name) + "?raw=1",
		BackURL: s.base + "/workspace/",
		Body:    views.Markdown(string(src), views.MarkdownOptions{WorkspaceDir: s.WorkspaceDir, WorkspaceURL: s.base + "/workspace/", WorkspaceRawQuery: "raw=1", DocDir: dir})}
	for _, n := range []string{static.AppCSS, static.SyntaxCSS} {
		if u := s.Assets.URL(n); u != "" {
			v.CSS = append(v.CSS, u)
		}
	}
	h := w.Header()
	h.Set("Content-Security-Policy", documentCSP)
	h.Set("Content-Type", "text/html; charset=utf-8")
	return views.DocumentPage(v).Render(r.Context(), w)
}

// workspaceRaw serves a file's bytes with its allow-listed type (never HTML), ranges
// supported, under the document policy; anything not shown inline is an attachment.
func (s *server) workspaceRaw(w http.ResponseWriter, r *http.Request, name string) error {
	f, err := s.Workspace.Open(name)
	if errors.Is(err, workspace.ErrIsDir) {
		return errNotFound
	}
	if err != nil {
		return err
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

// fileURL is the viewer's URL of workspace path name, escaped per segment.
func (s *server) fileURL(name string) string {
	segs := strings.Split(name, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return s.base + "/workspace/" + strings.Join(segs, "/")
}

// crumbs is the path to name, each step a link but the last.
func (s *server) crumbs(name string) []views.Link {
	out := []views.Link{{Title: "workspace", URL: s.base + "/workspace/"}}
	if name == "" {
		out[0].URL = ""
		return out
	}
	segs := strings.Split(name, "/")
	for i, seg := range segs {
		l := views.Link{Title: seg}
		if i < len(segs)-1 {
			l.URL = s.fileURL(strings.Join(segs[:i+1], "/")) + "/"
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
