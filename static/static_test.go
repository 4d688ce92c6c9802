package static

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
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
