package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/needs"
	"myco.dev/sessions"
)

// TestModelLeftTheCatalog (issue 20): a session whose model was removed from the config
// answers a submit with 409 unknown_model, naming select_model and the configured keys;
// its page offers the model picker; after select_model the submit works.
func TestModelLeftTheCatalog(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Turn{Text: "answered by m"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	cfg := filepath.Join(home, "profiles", "default", "config.toml")
	old, _ := os.ReadFile(cfg)
	withGone := string(old) + "\n[models.gone]\nprotocol = \"anthropic-messages\"\nbase_url = \"" + fake.URL + "\"\ncontext_window = 1000\n\n[models.other]\nprotocol = \"anthropic-messages\"\nbase_url = \"" + fake.URL + "\"\ncontext_window = 1000\n"
	os.WriteFile(cfg, []byte("model = \"m\"\n"+withGone), 0o600)
	cmd, u, _ := startServer(t, home)
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	code, out := c.post("/sessions", `{"request_id":"g","model":"gone"}`)
	if code != 201 {
		t.Fatalf("create = %d %v", code, out)
	}
	id := out["session_id"].(string)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	// The config loses the session's model.
	os.WriteFile(cfg, []byte("model = \"m\"\n"+string(old)+"\n[models.other]\nprotocol = \"anthropic-messages\"\nbase_url = \""+fake.URL+"\"\ncontext_window = 1000\n"), 0o600)
	_, u, _ = startServer(t, home)
	c = apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	code, out = c.post("/sessions/"+id+"/actions", `{"request_id":"s1","action":"submit","text":"hi"}`)
	if ec, msg := apiErr(out); code != 409 || ec != "unknown_model" || !strings.Contains(msg, "select_model") || !strings.Contains(msg, "m, other") {
		t.Errorf("submit on a session whose model is gone = %d %v, want 409 unknown_model naming select_model and the models m, other", code, out)
	}
	html := page(t, u+"s/"+id+"/")
	if !strings.Contains(html, `<select id="model"`) || !strings.Contains(html, "is no longer in the catalog") {
		t.Errorf("the page does not offer the model picker with the reason")
	}
	if code, out := c.post("/sessions/"+id+"/actions", `{"request_id":"m1","action":"select_model","model":"m"}`); code != 200 {
		t.Fatalf("select_model = %d %v", code, out)
	}
	if snap := c.submitWait(id, "s2", "hi"); snap["answer"] != "answered by m" {
		t.Errorf("after select_model: %v", snap)
	}
}

// TestDiskFull (issue 20): on a full disk a create answers 507 save_failed (not 500
// internal), a submit answers save_failed and the snapshot says that turn failed (not the
// previous turn's done); once space is freed the next submit works, without a restart.
func TestDiskFull(t *testing.T) {
	needs.Root(t, "mounting a small tmpfs as the session directory")
	fake := fakemodel.New(t, fakemodel.Turn{Text: "first"}, fakemodel.Turn{Text: "after the disk was freed"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	dir := filepath.Join(home, "profiles", "default", "session")
	os.MkdirAll(dir, 0o700)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		needs.Missing(t, "mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	_, u, _ := startServer(t, home)
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	id, snap := c.run("a", "hello")
	if snap["answer"] != "first" {
		t.Fatalf("first turn: %v", snap)
	}
	filler := filepath.Join(dir, "filler")
	fill(t, filler)
	code, out := c.post("/sessions", `{"request_id":"b"}`)
	if ec, _ := apiErr(out); code != 507 || ec != "save_failed" {
		t.Errorf("create on a full disk = %d %v, want 507 save_failed", code, out)
	}
	long := strings.Repeat("a long message to need a new page on the disk ", 200)
	code, out = c.post("/sessions/"+id+"/actions", `{"request_id":"s2","action":"submit","text":"`+long+`"}`)
	if ec, msg := apiErr(out); code != 507 || ec != "save_failed" || !strings.Contains(msg, "no space left") {
		t.Errorf("submit on a full disk = %d %v, want 507 save_failed saying why", code, out)
	}
	_, snap = c.get("/sessions/" + id)
	if le, _ := snap["last_error"].(map[string]any); snap["last_turn"] != "failed" || le["code"] != "save_failed" || snap["answer"] != "" {
		t.Errorf("snapshot after the failed save: last_turn %v last_error %v answer %q; want failed, save_failed, no answer", snap["last_turn"], snap["last_error"], snap["answer"])
	}
	os.Remove(filler)
	snap = c.submitWait(id, "s3", "now")
	if snap["last_turn"] != "done" || snap["answer"] != "after the disk was freed" {
		t.Errorf("after space was freed: %v", snap)
	}
	if code, out := c.post("/sessions", `{"request_id":"b"}`); code != 201 {
		t.Errorf("create after space was freed = %d %v", code, out)
	}
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// TestUnreadableSessionsListed (issue 20): a session file of a newer schema, or a damaged
// one, is listed with its problem, not hidden; opening it answers 409 unsupported_schema or
// damaged with that message, on the page and in the API; nothing rewrites it.
func TestUnreadableSessionsListed(t *testing.T) {
	home := profileHome(t, "anthropic-messages", fakemodel.New(t).URL, "")
	dir := filepath.Join(home, "profiles", "default", "session")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "future.session"), []byte(`{"version":6,"id":"future","created":"2027-01-01T00:00:00Z","threads":[]}`), 0o600)
	now := time.Now().UTC()
	at := now
	store := sessions.NewStore(dir)
	if err := store.Create(t.Context(), &sessions.Session{ID: "broken", Created: now, Title: "was fine", Threads: []*sessions.Thread{{ID: "t1", Created: now,
		Entries: []sessions.Entry{{Message: model.Message{Role: model.User, Parts: []model.Part{model.TextPart("hello")}}, AcceptedAt: &at}, {Message: model.Message{Role: model.Assistant, Parts: []model.Part{model.TextPart("hi")}}}}}}}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(store.Path("broken"))
	os.WriteFile(store.Path("broken"), bytes.Replace(data, []byte(`"hello"`), []byte(`"jello"`), 1), 0o600) // line 3's checksum fails
	before := map[string][]byte{}
	for _, id := range []string{"future", "broken"} {
		before[id], _ = os.ReadFile(store.Path(id))
	}
	_, u, _ := startServer(t, home)
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	_, list := c.get("/sessions")
	problems := map[string]string{}
	for _, s := range list["sessions"].([]any) {
		m := s.(map[string]any)
		p, _ := m["problem"].(string)
		problems[m["session_id"].(string)] = p
	}
	if !strings.HasPrefix(problems["future"], "needs a newer myco") || !strings.HasPrefix(problems["broken"], "damaged: "+store.Path("broken")+":3:") {
		t.Errorf("the listing = %v, want both files listed with their problems", problems)
	}
	for _, tt := range []struct{ id, code, says string }{
		{"future", "unsupported_schema", "needs a newer myco"},
		{"broken", "damaged", store.Path("broken") + ":3"},
	} {
		code, out := c.get("/sessions/" + tt.id)
		if ec, msg := apiErr(out); code != 409 || ec != tt.code || !strings.Contains(msg, tt.says) {
			t.Errorf("GET %s = %d %v, want 409 %s saying %q", tt.id, code, out, tt.code, tt.says)
		}
		resp, err := http.Get(u + "s/" + tt.id + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 409 || !strings.Contains(string(b), tt.says) {
			t.Errorf("the page of %s = %d, want 409 saying %q", tt.id, resp.StatusCode, tt.says)
		}
		if code, _ := c.post("/sessions/"+tt.id+"/actions", `{"request_id":"a","action":"archive"}`); code != 409 {
			t.Errorf("archive %s = %d, want 409", tt.id, code)
		}
	}
	if html := page(t, u); !strings.Contains(html, "future: needs a newer myco") {
		t.Errorf("the sessions page does not list the newer session")
	}
	for id, b := range before {
		if after, _ := os.ReadFile(store.Path(id)); !bytes.Equal(b, after) {
			t.Errorf("%s was rewritten", id)
		}
	}
}
