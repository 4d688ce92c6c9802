// Package static holds the browser's assets, embedded in the binary: our own app.css,
// app.js and syntax.css, and htmx 4 with its SSE extension in htmx/, which `make assets`
// copies from npm (pinned in package-lock.json) and which is committed, so that `go build`
// and `go install` make the same complete binary as `make build`; `make test` checks that
// the committed files are byte for byte what npm gives. Each file is served under a content-hashed name
// with a long cache lifetime, so a new build never meets a stale asset.
//
// It must not import anything of myco.
package static

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
)

//go:embed *
var files embed.FS

// The files the pages load, in order.
const (
	AppCSS    = "app.css"
	SyntaxCSS = "syntax.css"
	HTMX      = "htmx/htmx.min.js"
	SSE       = "htmx/ext/hx-sse.min.js"
	AppJS     = "app.js"
	// NotifyJS tells, by the browser's notifications, of a session that comes to need you.
	NotifyJS = "notify.js"
	// ThemeJS sets the chosen theme before the page paints.
	ThemeJS = "theme.js"
	// EventsWorker is the SharedWorker that holds a browser's one event connection.
	EventsWorker = "events-worker.js"
)

// Assets maps asset names to their content-hashed URLs and serves them.
type Assets struct {
	prefix string            // the URL path they are served under, e.g. "/static/"
	urls   map[string]string // name -> prefix + hashed name
	byURL  map[string]*asset // hashed name -> content
}

type asset struct {
	name string
	size int

	// data is the file's bytes, read on its first request: the hashes are made reading it
	// a piece at a time, so that a process that serves no page (myco -p) holds no copy.
	dataOnce sync.Once
	data     []byte

	// gz is data gzipped, when that is smaller; made on its first request, not when the
	// assets are loaded: a process that serves no page (myco -p serves only the API) never
	// pays for it, and one that does pays at its first page, not before its first turn.
	gzOnce sync.Once
	gz     []byte
}

// bytes returns the asset's data.
func (f *asset) bytes() []byte {
	f.dataOnce.Do(func() { f.data, _ = files.ReadFile(f.name) })
	return f.data
}

// gzipped returns the asset's gzipped data, or nil when gzip does not make it smaller.
func (f *asset) gzipped() []byte {
	f.gzOnce.Do(func() { f.gz = gzipped(f.bytes()) })
	return f.gz
}

// New returns the embedded assets, served under prefix.
func New(prefix string) *Assets {
	a := &Assets{prefix: prefix, urls: map[string]string{}, byURL: map[string]*asset{}}
	buf := make([]byte, 32<<10)
	fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !servable(p) {
			return nil
		}
		f, err := files.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		h := sha256.New()
		n, err := io.CopyBuffer(h, f, buf)
		if err != nil {
			return nil
		}
		ext := path.Ext(p)
		hashed := strings.TrimSuffix(p, ext) + "." + hex.EncodeToString(h.Sum(nil)[:6]) + ext
		a.urls[p] = prefix + hashed
		a.byURL[hashed] = &asset{name: p, size: int(n)}
		return nil
	})
	return a
}

// servable reports whether an embedded file is one the browser may load.
func servable(p string) bool {
	switch path.Ext(p) {
	case ".css", ".js", ".svg", ".png", ".ico":
		return true
	}
	return false
}

// URL returns the content-hashed URL of asset name, or "" when it is not embedded (htmx
// before `make assets`).
func (a *Assets) URL(name string) string { return a.urls[name] }

// Missing returns the names among want that are not embedded.
func (a *Assets) Missing(want ...string) []string {
	var out []string
	for _, w := range want {
		if a.urls[w] == "" {
			out = append(out, w)
		}
	}
	return out
}

// Size returns the bytes of asset name.
func (a *Assets) Size(name string) int {
	if u := a.urls[name]; u != "" {
		return a.byURL[strings.TrimPrefix(u, a.prefix)].size
	}
	return 0
}

// ServeHTTP serves an asset by its hashed name (the request path after the prefix), with an
// explicit content type and a year-long immutable cache lifetime.
func (a *Assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, a.prefix)
	f, ok := a.byURL[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	typ := mime.TypeByExtension(path.Ext(f.name))
	switch path.Ext(f.name) {
	case ".js":
		typ = "text/javascript; charset=utf-8"
	case ".css":
		typ = "text/css; charset=utf-8"
	}
	h := w.Header()
	h.Set("Content-Type", typ)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	// Public code and styles; a sandboxed workspace document (an opaque origin) loads them.
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	h.Set("Vary", "Accept-Encoding")
	data := f.bytes()
	if acceptsGzip(r) {
		if gz := f.gzipped(); gz != nil {
			data = gz
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("Content-Length", fmt.Sprint(len(data)))
	if r.Method != http.MethodHead {
		w.Write(data)
	}
}

// acceptsGzip reports whether the request accepts a gzip-encoded answer.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(name) == "gzip" && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// gzipped returns data compressed, or nil when that saves nothing.
func gzipped(data []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(data)
	zw.Close()
	if b.Len() >= len(data) {
		return nil
	}
	return b.Bytes()
}
