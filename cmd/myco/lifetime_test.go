package main

import (
	"bytes"
	"errors"
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

// running reports whether process pid exists and is not a zombie (an orphan's zombie
// lingers where PID 1 does not reap).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil && !strings.Contains(err.Error(), "no such")
	}
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}

// waitEnded waits until every pid has ended.
func waitEnded(t *testing.T, what string, deadline time.Time, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		for running(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: process %d is still running", what, pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// startSleeper runs myco -p with a bash call that writes its own pid and its background
// sleep's pid, and waits for both.
func startSleeper(t *testing.T, args ...string) (cmd *exec.Cmd, home string, bash, sleep int, stderr *syncbuf.Buffer) {
	t.Helper()
	bin := binary(t)
	dir := t.TempDir()
	srv := fakemodel.New(t, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash",
		Args: `{"command":"echo $$ > ` + dir + `/bash; sleep 300 & echo $! > ` + dir + `/sleep; wait"}`}}})
	home = profileHome(t, "anthropic-messages", srv.URL, "")
	cmd = exec.Command(bin, append([]string{"-p", "sleep please"}, args...)...)
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	stderr = new(syncbuf.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	bash = waitPID(t, filepath.Join(dir, "bash"), deadline)
	sleep = waitPID(t, filepath.Join(dir, "sleep"), deadline)
	return cmd, home, bash, sleep, stderr
}

// TestKilledLeavesNoToolProcess kills myco -p with SIGKILL while a bash call runs a
// background sleep: the reaper ends the call's whole process group.
func TestKilledLeavesNoToolProcess(t *testing.T) {
	cmd, _, bash, sleep, _ := startSleeper(t)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitEnded(t, "after SIGKILL of myco", time.Now().Add(15*time.Second), bash, sleep)
}

// TestHangupStopsAndSaves closes the terminal on myco -p (SIGHUP) during a tool call: the
// turn stops and is saved with the call's outcome unknown, the tool's processes end, and
// the exit status is 129.
func TestHangupStopsAndSaves(t *testing.T) {
	cmd, home, bash, sleep, stderr := startSleeper(t)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 129 {
		t.Fatalf("exit after SIGHUP = %v, want status 129; stderr:\n%s", err, stderr)
	}
	waitEnded(t, "after SIGHUP", time.Now().Add(10*time.Second), bash, sleep)
	id := sessionOf(t, stderr.String())
	sess, err := sessions.NewStore(filepath.Join(home, "profiles", "default", "session")).Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	th := sess.Latest()
	if th.LastTurn() != sessions.TurnCancelled {
		t.Errorf("last turn = %q, want cancelled", th.LastTurn())
	}
	last := th.Entries[len(th.Entries)-1].Message
	if len(last.Parts) != 1 || last.Parts[0].ToolResult == nil || !last.Parts[0].ToolResult.Unknown {
		t.Errorf("last saved message = %+v, want the call's unknown outcome", last)
	}
}

func sessionOf(t *testing.T, stderr string) string {
	t.Helper()
	for _, line := range strings.Split(stderr, "\n") {
		if id, ok := strings.CutPrefix(line, "session: "); ok {
			return id
		}
	}
	t.Fatalf("no session line in %q", stderr)
	return ""
}

// TestUnwritableAnswerFails runs myco -p with its stdout on /dev/full and on a closed
// pipe: the answer cannot be written, so the exit status is 1 with a message, and the
// session keeps the answer.
func TestUnwritableAnswerFails(t *testing.T) {
	bin := binary(t)
	for _, tt := range []struct {
		name  string
		setup func(cmd *exec.Cmd) func()
	}{
		{"dev full", func(cmd *exec.Cmd) func() {
			f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout = f
			return func() { f.Close() }
		}},
		{"closed pipe", func(cmd *exec.Cmd) func() {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			cmd.Stdout = w
			return func() { w.Close() }
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakemodel.New(t, fakemodel.Turn{Text: "the answer"})
			home := profileHome(t, "anthropic-messages", srv.URL, "")
			cmd := exec.Command(bin, "-p", "hi")
			cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			done := tt.setup(cmd)
			err := cmd.Run()
			done()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit = %v, want status 1; stderr:\n%s", err, &stderr)
			}
			if !strings.Contains(stderr.String(), "could not be written") {
				t.Errorf("stderr = %q, want it to say the answer could not be written", &stderr)
			}
			sess, err := sessions.NewStore(filepath.Join(home, "profiles", "default", "session")).Load(t.Context(), sessionOf(t, stderr.String()))
			if err != nil {
				t.Fatal(err)
			}
			th := sess.Latest()
			if got := th.Entries[len(th.Entries)-1].Message.Text(); got != "the answer" {
				t.Errorf("saved answer = %q", got)
			}
		})
	}
}
