package static

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"
)

// TestServeGzip: an asset is served gzipped to a client that accepts it (made on its first
// request, the same bytes after), and as it is to one that does not.
func TestServeGzip(t *testing.T) {
	a := New("/static/")
	u := a.URL(AppJS)
	if u == "" {
		t.Fatal("app.js is not embedded")
	}
	raw, _ := files.ReadFile(AppJS)
	for range 2 {
		req := httptest.NewRequest("GET", u, nil)
		req.Header.Set("Accept-Encoding", "br, gzip")
		w := httptest.NewRecorder()
		a.ServeHTTP(w, req)
		if w.Header().Get("Content-Encoding") != "gzip" {
			t.Fatalf("Content-Encoding = %q, want gzip", w.Header().Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(w.Body)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(zr)
		if !bytes.Equal(got, raw) {
			t.Fatal("the gzipped answer is not app.js")
		}
	}
	req := httptest.NewRequest("GET", u, nil)
	req.Header.Set("Accept-Encoding", "gzip;q=0")
	w := httptest.NewRecorder()
	a.ServeHTTP(w, req)
	if w.Code != http.StatusOK || w.Header().Get("Content-Encoding") != "" || !bytes.Equal(w.Body.Bytes(), raw) {
		t.Errorf("without gzip: %d %q, %d bytes", w.Code, w.Header().Get("Content-Encoding"), w.Body.Len())
	}
}

// TestHashedNames: each asset's URL carries the first bytes of its content's SHA-256 (read a
// piece at a time when the assets load) and its size is the file's.
func TestHashedNames(t *testing.T) {
	a := New("/static/")
	for _, name := range []string{AppJS, AppCSS, HTMX} {
		raw, err := files.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		ext := path.Ext(name)
		if want := "/static/" + strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:6]) + ext; a.URL(name) != want {
			t.Errorf("URL(%s) = %s, want %s", name, a.URL(name), want)
		}
		if a.Size(name) != len(raw) {
			t.Errorf("Size(%s) = %d, want %d", name, a.Size(name), len(raw))
		}
	}
}
