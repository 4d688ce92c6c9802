package main

import (
	"bufio"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"myco.dev/internal/syncbuf"
)

// demo runs scripts/demo.sh, the README's first command, with this test's binary and a
// home of its own, in a process group of its own (Ctrl-C reaches the whole group).
func demo(t *testing.T, args ...string) (*exec.Cmd, io.Reader, *syncbuf.Buffer, string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(t.TempDir(), "demo")
	cmd := exec.Command("bash", append([]string{"scripts/demo.sh"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "MYCO_BIN="+binary(t), "MYCO_DEMO_HOME="+home, "MYCO_ADDR=127.0.0.1:0",
		"MYCO_PROFILE=", "MYCO_CONFIG=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, stderr := startPiped(t, cmd)
	return cmd, out, stderr, home
}

// TestDemoServer: make demo's script starts the server against the scripted model and
// prints the URL to open first; the page answers; Ctrl-C ends the server and the fake
// model, and the demo's home (with its sessions) stays.
func TestDemoServer(t *testing.T) {
	cmd, out, stderr, home := demo(t)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") || !strings.HasSuffix(line, "/profiles/default/\n") {
		t.Fatalf("first line %q, %v; want the URL to open; stderr:\n%s", line, err, stderr)
	}
	resp, err := http.Get(strings.TrimSpace(line))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %v %v", line, resp, err)
	}
	resp.Body.Close()
	demoTour(t, strings.TrimSuffix(strings.TrimSpace(line), "/"))
	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) // as Ctrl-C does
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the demo did not end on Ctrl-C; stderr:\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), "MYCO_HOME="+home+" (kept") {
		t.Errorf("the demo does not say where its home is kept:\n%s", stderr)
	}
	// MYCO_ADDR=127.0.0.1:0: the port-forward named is the port the system picked.
	u, _ := url.Parse(strings.TrimSpace(line))
	if port := u.Port(); !strings.Contains(stderr.String(), "ssh -L "+port+":127.0.0.1:"+port+" ") || port != "8080" && strings.Contains(stderr.String(), "ssh -L 8080:") {
		t.Errorf("the demo does not name the port it bound (%s) in its port-forward:\n%s", port, stderr)
	}
	if _, err := os.Stat(filepath.Join(home, "profiles", "default", "config.toml")); err != nil {
		t.Errorf("the demo's home is gone: %v", err)
	}
}

// TestDemoPrompt: the demo as one prompt answers with a real tool call's output, and the
// session it names stays in the demo's home.
func TestDemoPrompt(t *testing.T) {
	cmd, out, stderr, home := demo(t, "-p", "What machine is this?")
	answer, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("demo -p: %v; stderr:\n%s", err, stderr)
	}
	if !strings.Contains(string(answer), "What `bash` printed") || !strings.Contains(string(answer), "[exit status 0]") {
		t.Errorf("answer:\n%s", answer)
	}
	var id string
	for l := range strings.Lines(stderr.String()) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "session: "); ok {
			id = v
		}
	}
	if _, err := os.Stat(filepath.Join(home, "profiles", "default", "session", id+".session")); id == "" || err != nil {
		t.Errorf("the session the demo printed (%q) is not in its home: %v\n%s", id, err, stderr)
	}
}

// demoTour walks the demo's script through the API of the server at base: the first
// answer streams a tool call's output; the second message meets a scripted 529 and the
// events carry the retry notice; the third starts a slow command, which Stop ends.
func demoTour(t *testing.T, base string) {
	t.Helper()
	api := apiClient{t, base + "/api"}
	id, snap := api.run("tour", "What machine is this?")
	if a, _ := snap["answer"].(string); !strings.Contains(a, "What `bash` printed") {
		t.Fatalf("first answer = %q", a)
	}
	events, err := http.Get(base + "/api/events?session=" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Body.Close()
	api.post("/sessions/"+id+"/actions", `{"request_id":"tour-2","action":"submit","text":"next"}`)
	sc := bufio.NewScanner(events.Body)
	retried := false
	for sc.Scan() && !strings.Contains(sc.Text(), `"type":"done"`) {
		retried = retried || strings.Contains(sc.Text(), `"type":"notice"`) && strings.Contains(sc.Text(), "529")
	}
	if !retried {
		t.Error("the second message showed no retry notice for the scripted 529")
	}
	if a, _ := api.wait(id)["answer"].(string); !strings.Contains(a, "was a **retry**") {
		t.Errorf("second answer = %q", a)
	}
	api.post("/sessions/"+id+"/actions", `{"request_id":"tour-3","action":"submit","text":"next"}`)
	for sc.Scan() && !strings.Contains(sc.Text(), "step 2 of 30") {
	}
	if code, out := api.post("/sessions/"+id+"/cancel", ``); code != 200 || out["stopped"] != true {
		t.Fatalf("cancel = %d %v", code, out)
	}
	snap = api.wait(id)
	if snap["last_turn"] != "stopped" {
		t.Errorf("after Stop: last_turn %v", snap["last_turn"])
	}
}
