package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"myco.dev/internal/fakemodel"
	"myco.dev/internal/sshdtest"
)

// TestImageCapFollowsModelSwitch: the hosts run with the catalog's largest image cap and
// each call is held to the session's current model's: launched on a model with a large cap,
// switched (/model) to one with a small cap, view_image of an image between the two caps is
// refused with the sizes, the cap, the model and what to do, on local and on a remote
// reached over a real sshd; switched back, it goes through.
func TestImageCapFollowsModelSwitch(t *testing.T) {
	srv := sshdtest.Start(t)
	if err := os.MkdirAll(filepath.Join(srv.Home, ".local", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binary(t), filepath.Join(srv.Home, ".local", "bin", "myco")); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(t.TempDir(), "mid.png")
	if err := os.WriteFile(img, append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 2992)...), 0o644); err != nil { // 3000 bytes, 4000 of base64
		t.Fatal(err)
	}
	view := func(host string) fakemodel.Turn {
		return fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "view_image", Args: `{"path":"` + img + `","host":"` + host + `"}`}}}
	}
	var turns []fakemodel.Turn
	for range 3 {
		turns = append(turns, view("local"), view("devbox"), fakemodel.Turn{Text: "looked"})
	}
	fake := fakemodel.New(t, turns...)
	home := t.TempDir()
	model := func(key string, maxImage int) string {
		return "[models." + key + "]\nprotocol = \"anthropic-messages\"\nbase_url = \"" + fake.URL + "\"\ncontext_window = 100000\nmax_image_base64_bytes = " + strconv.Itoa(maxImage) + "\n"
	}
	sshdtest.WriteFile(t, filepath.Join(home, "profiles", "default", "config.toml"), "model = \"big\"\n"+model("big", 1<<20)+model("small", 3500))
	chat := startChat(t, "HOME="+srv.Home, "MYCO_HOME="+home)

	results := func(from int) string { // the tool results of the turn's second and third requests
		reqs := fake.Requests()
		return lastUserText(t, reqs[from+1]) + lastUserText(t, reqs[from+2])
	}
	images := func(from int) int {
		reqs := fake.Requests()
		return strings.Count(string(reqs[from+1].Body)+string(reqs[from+2].Body), `"type":"image"`)
	}
	chat.say(t, fake, "look", 3)
	if n := images(0); n < 2 {
		t.Errorf("under the launch model: %d image blocks, want the local and the remote image; results %q", n, results(0))
	}
	io.WriteString(chat.stdin, "/model small\n")
	chat.say(t, fake, "look again", 6)
	got := results(3)
	refusal := img + " is 4000 bytes of base64 (about 3000 bytes on disk), over the limit of the current model small: max_image_base64_bytes = 3500"
	if strings.Count(got, refusal) != 2 || !strings.Contains(got, "host devbox: "+refusal) || !strings.Contains(got, "Scale it down or crop it") {
		t.Errorf("after /model small, the results = %q, want %q on local and on devbox", got, refusal)
	}
	io.WriteString(chat.stdin, "/model big\n")
	chat.say(t, fake, "and once more", 9)
	if n, prev := images(6), images(3); n <= prev {
		t.Errorf("after /model big: %d image blocks (%d before), want the images again; results %q", n, prev, results(6))
	}
	chat.quit(t)
}

// TestRelativeImagePath: view_image takes a path relative to the current directory of the
// session's bash session, on local and on a remote host; the editor's refusal of a relative
// path names the absolute one.
func TestRelativeImagePath(t *testing.T) {
	srv := sshdtest.Start(t)
	if err := os.MkdirAll(filepath.Join(srv.Home, ".local", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binary(t), filepath.Join(srv.Home, ".local", "bin", "myco")); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "shot.png"), append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 20)...), 0o644); err != nil {
		t.Fatal(err)
	}
	var turns []fakemodel.Turn
	for _, host := range []string{"local", "devbox"} {
		turns = append(turns,
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"action":"start","command":"bash --noprofile --norc","host":"` + host + `"}`}}},
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"action":"write","session_id":"b1","input":"cd ` + dir + ` && echo moved","timeout_secs":10,"host":"` + host + `"}`}}},
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "view_image", Args: `{"path":"shot.png","host":"` + host + `"}`}}},
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "str_replace_based_edit_tool", Args: `{"command":"view","path":"shot.png","host":"` + host + `"}`}}},
		)
	}
	fake := fakemodel.New(t, append(turns, fakemodel.Turn{Text: "done"})...)
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	cmd := exec.CommandContext(t.Context(), binary(t), "-p", "look")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+srv.Home, "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("myco -p: %v\n%s", err, out)
	}
	reqs := fake.Requests()
	want := filepath.Join(dir, "shot.png") + ` (\"shot.png\" resolved against the current directory of bash session b1, ` + dir + ")"
	for i, host := range []string{"local", "devbox"} {
		if got := lastUserText(t, reqs[4*i+3]); !strings.Contains(got, want+": image/png") {
			t.Errorf("view_image shot.png on %s = %q, want %q", host, got, want)
		}
		if got := lastUserText(t, reqs[4*i+4]); !strings.Contains(got, "Use "+want) {
			t.Errorf("the editor on %s = %q, want %q", host, got, "Use "+want)
		}
	}
}
