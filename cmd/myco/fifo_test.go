package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
)

// boundedGet fetches url with a client that gives up after 10 s, so that a request the
// server never answers fails the test instead of hanging it.
func boundedGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v (the server did not answer)", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSpecialSessionFiles (issue 28): a FIFO and a directory named like session files are
// listed as damaged, and opening either answers 409 damaged naming the file and what it
// is, at once: the FIFO never blocks the listing or any page, the directory is no 500.
// The other session stays readable and usable.
func TestSpecialSessionFiles(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Turn{Text: "fine"}, fakemodel.Turn{Text: "still fine"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	_, u, stderr := startServer(t, home)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr)
		}
	})
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	id, _ := c.run("a", "hello")
	dir := filepath.Join(home, "profiles", "default", "session")
	fifo, sub := filepath.Join(dir, "pipe.session"), filepath.Join(dir, "folder.session")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}

	code, body := boundedGet(t, c.base+"/sessions")
	var list struct {
		Sessions []struct {
			ID      string `json:"session_id"`
			Problem string `json:"problem"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil {
		t.Fatalf("GET /api/sessions = %d %s", code, body)
	}
	problems := map[string]string{}
	for _, s := range list.Sessions {
		problems[s.ID] = s.Problem
	}
	for _, tt := range []struct{ id, path, what string }{
		{"pipe", fifo, "a FIFO (named pipe)"},
		{"folder", sub, "a directory"},
	} {
		if p := problems[tt.id]; !strings.HasPrefix(p, "damaged: "+tt.path) || !strings.Contains(p, tt.what) {
			t.Errorf("the listing's problem of %s = %q, want damaged naming %s and %q", tt.id, p, tt.path, tt.what)
		}
		code, body := boundedGet(t, c.base+"/sessions/"+tt.id)
		var out map[string]any
		json.Unmarshal([]byte(body), &out)
		if ec, msg := apiErr(out); code != 409 || ec != "damaged" || !strings.Contains(msg, tt.path) || !strings.Contains(msg, tt.what) {
			t.Errorf("GET /api/sessions/%s = %d %s, want 409 damaged naming %s and %q", tt.id, code, body, tt.path, tt.what)
		}
		if code, body := boundedGet(t, u+"s/"+tt.id+"/"); code != 409 || !strings.Contains(body, tt.path) {
			t.Errorf("the page of %s = %d, want 409 naming %s", tt.id, code, tt.path)
		}
	}
	if code, body := boundedGet(t, u); code != 200 || !strings.Contains(body, "pipe") {
		t.Errorf("the sessions page = %d, want it listing the FIFO as damaged", code)
	}
	if code, body := boundedGet(t, u+"s/"+id+"/"); code != 200 || !strings.Contains(body, "fine") {
		t.Errorf("the good session's page = %d, want its transcript", code)
	}
	if code, out := c.post("/sessions/"+id+"/actions", `{"request_id":"b","action":"submit","text":"again"}`); code != 200 {
		t.Fatalf("submit to the good session = %d %v", code, out)
	}
	if snap := c.wait(id); snap["answer"] != "still fine" {
		t.Errorf("the good session's second turn: %v", snap)
	}
}

// TestConfigFIFO (issue 28): a FIFO where config.toml should be, at start or put there
// while the server runs, is a config error that names the file and says what it is, on
// every page; it never blocks a request.
func TestConfigFIFO(t *testing.T) {
	fake := fakemodel.New(t)
	t.Run("at start", func(t *testing.T) {
		home := profileHome(t, "anthropic-messages", fake.URL, "")
		cfg := filepath.Join(home, "profiles", "default", "config.toml")
		os.Remove(cfg)
		if err := syscall.Mkfifo(cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		_, u, _ := startServer(t, home)
		for _, path := range []string{"", "workspace/"} {
			code, body := boundedGet(t, u+path)
			if code != 200 || !strings.Contains(body, cfg) || !strings.Contains(body, "FIFO") {
				t.Errorf("GET /%s = %d, want the page showing that %s is a FIFO", path, code, cfg)
			}
		}
	})
	t.Run("while serving", func(t *testing.T) {
		home := profileHome(t, "anthropic-messages", fake.URL, "")
		cfg := filepath.Join(home, "profiles", "default", "config.toml")
		_, u, _ := startServer(t, home)
		if code, _ := boundedGet(t, u); code != 200 {
			t.Fatalf("GET / = %d", code)
		}
		os.Remove(cfg)
		if err := syscall.Mkfifo(cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		// The server looks at the file at most once a second, when a request comes.
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			code, body := boundedGet(t, u)
			if code == 200 && strings.Contains(body, cfg) && strings.Contains(body, "FIFO") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the pages never showed that config.toml is a FIFO: %d", code)
			}
		}
	})
}
