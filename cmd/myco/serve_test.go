package main

import (
	"bufio"
	"bytes"
	"errors"
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

	"myco.dev/internal/fakemodel"
	"myco.dev/internal/syncbuf"
	"myco.dev/sessions"
)

// startServer runs the real binary as the server on a free loopback port and returns its
// URL (the first line it prints).
func startServer(t testing.TB, home string, args ...string) (*exec.Cmd, string, *syncbuf.Buffer) {
	t.Helper()
	return startServerEnv(t, home, nil, args...)
}

// startServerEnv is startServer with env added to the server's environment.
func startServerEnv(t testing.TB, home string, env []string, args ...string) (*exec.Cmd, string, *syncbuf.Buffer) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG="), env...)
	out, stderr := startPiped(t, cmd)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no URL on stdout: %v; stderr:\n%s", err, stderr)
	}
	return cmd, strings.TrimSpace(line), stderr
}

// startPiped starts cmd with its stdout piped and its stderr kept, and kills it when the
// test ends: its process group, when cmd has one of its own, else the process.
func startPiped(t testing.TB, cmd *exec.Cmd) (io.Reader, *syncbuf.Buffer) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(syncbuf.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group this test made
		} else {
			cmd.Process.Kill()
		}
		cmd.Wait()
	})
	return out, stderr
}

// TestServerStartsAndStops runs myco with no mode: the first stdout line is the URL of
// the profile's pages; SIGTERM during a turn stops it, saves the turn as cancelled and
// ends the tool's process.
func TestServerStartsAndStops(t *testing.T) {
	dir := t.TempDir()
	srv := fakemodel.New(t, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash",
		Args: `{"command":"echo $$ > ` + dir + `/pid; sleep 300"}`}}})
	home := profileHome(t, "anthropic-messages", srv.URL, "")
	cmd, u, stderr := startServer(t, home)
	if !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasSuffix(u, "/profiles/default/") {
		t.Fatalf("first line = %q, want http://127.0.0.1:PORT/profiles/default/", u)
	}
	resp, err := http.Get(u)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s = %v, %v", u, resp, err)
	}
	resp.Body.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirect.PostForm(u+"s", url.Values{})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("new session = %v, %v", resp, err)
	}
	page := strings.TrimSuffix(u, "/profiles/default/") + resp.Header.Get("Location")
	if resp, err = noRedirect.PostForm(page+"submit", url.Values{"text": {"sleep"}}); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("submit = %v, %v", resp, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	pid := waitPID(t, filepath.Join(dir, "pid"), deadline)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM = %v; stderr:\n%s", err, stderr)
	}
	waitEnded(t, "after the server stopped", deadline, pid)
	id := strings.TrimSuffix(strings.Split(page, "/s/")[1], "/")
	sess, err := sessions.NewStore(filepath.Join(home, "profiles", "default", "session")).Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if th := sess.Latest(); th.LastTurn() != sessions.TurnCancelled {
		t.Errorf("the running turn ended %q, want cancelled", th.LastTurn())
	}
}

// TestServerLoopbackOnly refuses an address that is not loopback, with exit status 2,
// from --addr or from MYCO_ADDR; the port-forward it suggests names the port asked for.
func TestServerLoopbackOnly(t *testing.T) {
	home := profileHome(t, "anthropic-messages", "http://127.0.0.1:9", "")
	cmd := exec.Command(binary(t))
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=", "MYCO_ADDR=0.0.0.0:9000")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), `MYCO_ADDR "0.0.0.0:9000" is not a loopback address`) ||
		!strings.Contains(string(out), "ssh -L 9000:127.0.0.1:9000 THIS-HOST") {
		t.Errorf("MYCO_ADDR=0.0.0.0:9000 myco = %v, output %q; want exit 2 naming MYCO_ADDR and forwarding port 9000", err, out)
	}
	for _, addr := range []string{"0.0.0.0:8080", "[::]:0", "192.168.1.10:8080", ":8080", "example.com:80", "127.0.0.1"} {
		cmd := exec.Command(binary(t), "--addr", addr)
		cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=", "MYCO_ADDR=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Stdout = io.Discard
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "--addr") {
			t.Errorf("myco --addr %s = %v, stderr %q; want exit 2 naming --addr", addr, err, &stderr)
		}
	}
}
