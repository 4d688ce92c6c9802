package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"myco.dev/internal/fakemodel"
	"myco.dev/internal/needs"
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
