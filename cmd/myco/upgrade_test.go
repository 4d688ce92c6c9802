package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"myco.dev/internal/needs"
)

// TestUpgradeUnderARunningServer (issue 29): make install replaces the binary while a
// server runs. A worker that then starts again (here: killed) runs the server's own binary
// (/proc/self/exe), never the new file: the profile's /api/version and the server's
// /healthz name one build, and it is the old one. The new binary serves once restarted.
func TestUpgradeUnderARunningServer(t *testing.T) {
	needs.Proc(t)
	dir := t.TempDir()
	exe := filepath.Join(dir, "myco")
	copyFile(t, binary(t), exe)
	home := profileHome(t, "anthropic-messages", "http://127.0.0.1:9", "")
	srv := exec.Command(exe, "--addr", "127.0.0.1:0")
	srv.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	out, stderr := startPiped(t, srv)
	line := make([]byte, 256)
	n, _ := out.Read(line)
	url := strings.TrimSpace(strings.SplitN(string(line[:n]), "\n", 2)[0])
	root := url[:strings.Index(url, "/profiles/")]
	builds := func() (server, worker string) {
		t.Helper()
		var h struct{ Version string }
		getJSON(t, root+"/healthz", &h)
		var v struct{ Build string }
		getJSON(t, url+"api/version", &v)
		return h.Version, v.Build
	}
	old, worker := builds()
	if old == "" || worker != old {
		t.Fatalf("before the upgrade: the server says %q, its worker %q", old, worker)
	}

	// The upgrade: another build renamed over the path, as install(1) does.
	next := filepath.Join(dir, "myco.new")
	if b, err := exec.Command("go", "build", "-ldflags=-X main.version=9.9.9-next", "-o", next, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the next myco: %v\n%s", err, b)
	}
	if err := os.Rename(next, exe); err != nil {
		t.Fatal(err)
	}
	pid := workerPID(t, root, "default")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var now, after string
	for deadline := time.Now().Add(30 * time.Second); ; {
		now, after = builds() // a request starts the worker again
		if after != "" && runningPID(t, root, "default") != pid || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if now != old || after != old {
		t.Errorf("after the upgrade and a worker's restart: the server says %q, its worker %q; want both the running build %q\nstderr:\n%s", now, after, old, stderr)
	}
	if b, err := exec.Command(exe, "--version").Output(); err != nil || !strings.HasPrefix(string(b), "myco 9.9.9-next (") {
		t.Errorf("the installed file says %q, %v: the upgrade is there for the next start", b, err)
	}
}

// copyFile copies the executable from to to.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// getJSON decodes the JSON answer of GET url into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s = %d %q: %v", url, resp.StatusCode, b, err)
	}
}

// runningPID is the pid of profile's running worker, 0 when none runs.
func runningPID(t *testing.T, root, profile string) int {
	t.Helper()
	for _, p := range status(t, root)["profiles"].([]any) {
		if m := p.(map[string]any); m["profile"] == profile && m["running"] == true {
			return int(m["pid"].(float64))
		}
	}
	return 0
}
