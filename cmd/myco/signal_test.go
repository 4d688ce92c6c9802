package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
	"myco.dev/sessions"
)

// TestInterruptExits130 sends SIGINT to myco -p while a tool runs: the exit status is 130,
// the running command's process group is killed, and the saved session records the call's
// outcome as unknown.
func TestInterruptExits130(t *testing.T) {
	bin := binary(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	srv := fakemodel.New(t, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash",
		Args: `{"command":"echo $$ > ` + pidFile + `; sleep 60"}`}}})
	home := profileHome(t, "anthropic-messages", srv.URL, "")
	cmd := exec.Command(bin, "-p", "sleep please")
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var sessionID string
	for sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, "session: "); ok {
			sessionID = id
		}
		if strings.HasPrefix(line, "→ bash") {
			break
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	pid := waitPID(t, pidFile, deadline)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit = %v, want status 130; stderr:\n%s", err, rest.String())
	}
	if !strings.Contains(rest.String(), "interrupted") {
		t.Errorf("stderr after SIGINT = %q, want it to say interrupted", rest.String())
	}
	waitGone(t, pid, deadline)
	sess, err := sessions.NewStore(filepath.Join(home, "profiles", "default", "session")).Load(t.Context(), sessionID)
	if err != nil {
		t.Fatalf("load session %q: %v", sessionID, err)
	}
	entries := sess.Latest().Entries
	last := entries[len(entries)-1].Message
	if len(last.Parts) != 1 || last.Parts[0].ToolResult == nil || !last.Parts[0].ToolResult.Unknown {
		t.Fatalf("last saved message = %+v, want the call's unknown outcome", last)
	}
}

// TestStdinNotReadWithoutDash runs myco -p with a standard input that never closes: the
// prompt comes from the flag, so the run must finish without reading it.
func TestStdinNotReadWithoutDash(t *testing.T) {
	bin := binary(t)
	srv := fakemodel.New(t, fakemodel.Turn{Text: "ok"})
	home := profileHome(t, "openai-completions", srv.URL, "")
	cmd := exec.Command(bin, "-p", "hi")
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	w, err := cmd.StdinPipe() // held open for the whole run
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = cmd.Output()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil || string(out) != "ok\n" {
			t.Fatalf("myco -p = %q, %v", out, err)
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("myco -p hung on an open standard input")
	}
}

// TestChatInterruptStopsTheTurn sends SIGINT to the chat while a tool runs: the turn stops
// (its command's process is ended), the chat goes on to the next line, and the end of input
// ends it with status 0.
func TestChatInterruptStopsTheTurn(t *testing.T) {
	bin := binary(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	srv := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"echo $$ > ` + pidFile + `; sleep 60"}`}}},
		fakemodel.Turn{Text: "still here"})
	home := profileHome(t, "anthropic-messages", srv.URL, "")
	cmd := exec.Command(bin, "--mode", "cli")
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitLine := func(prefix string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stderr ended before a line with %q", prefix)
				}
				if strings.Contains(l, prefix) {
					return
				}
			case <-timeout:
				t.Fatalf("no stderr line with %q", prefix)
			}
		}
	}
	stdin.Write([]byte("sleep please\n"))
	waitLine("→ bash")
	deadline := time.Now().Add(10 * time.Second)
	pid := waitPID(t, pidFile, deadline)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitLine("myco: interrupted")
	waitGone(t, pid, deadline)
	stdin.Write([]byte("are you there?\n"))
	stdin.Close()
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chat exit = %v, want 0", err)
	}
	if !strings.Contains(stdout.String(), "still here\n") {
		t.Errorf("stdout = %q, want the answer to the line after the interrupt", stdout.String())
	}
}

// waitPID waits until the tool has written its pid to path, and returns it.
func waitPID(t *testing.T, path string, deadline time.Time) int {
	t.Helper()
	for {
		if raw, err := os.ReadFile(path); err == nil {
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(raw))); pid > 0 {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the tool never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone waits until process pid has ended.
func waitGone(t *testing.T, pid int, deadline time.Time) {
	t.Helper()
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the tool's process %d survived the interrupt", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
