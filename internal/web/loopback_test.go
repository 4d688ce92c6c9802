package web

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestLoopback: a loopback server serves its handler on 127.0.0.1 until Close, which
// removes its token file, if it wrote one.
func TestLoopback(t *testing.T) {
	dir := t.TempDir()
	l, err := ListenLoopback(func(port string) string { return filepath.Join(dir, "cli-"+port+".token") }, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	req, _ := http.NewRequestWithContext(t.Context(), "GET", l.URL()+"/", nil)
	if l.Token != "" {
		req.Header.Set("Authorization", "Bearer "+l.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hello" {
		t.Errorf("GET %s = %q, want hello", l.URL(), b)
	}
	l.Close()
	if l.TokenFile != "" {
		if _, err := os.Stat(l.TokenFile); !os.IsNotExist(err) {
			t.Errorf("the token file after Close: %v, want it gone", err)
		}
	}
	if _, err := http.Get(l.URL() + "/"); err == nil {
		t.Error("GET after Close succeeded")
	}
}
