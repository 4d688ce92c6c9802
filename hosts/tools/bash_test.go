package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func call(t *testing.T, tool Tool, owner string, input any) Result {
	t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Call(t.Context(), owner, b)
}

func newTestBash(t *testing.T) *Bash {
	b := NewBash(BashOptions{Settle: 100 * time.Millisecond})
	t.Cleanup(b.Close)
	return b
}

func TestBashExec(t *testing.T) {
	b := newTestBash(t)
	tests := []struct {
		name    string
		input   map[string]any
		want    []string
		isError bool
	}{
		{"action defaults to exec", map[string]any{"command": "echo hi"}, []string{"hi\n", "[exit status 0]"}, false},
		{"stderr is combined", map[string]any{"command": "echo out; echo err >&2"}, []string{"out\n", "err\n"}, false},
		{"exit status reported", map[string]any{"command": "exit 3", "action": "exec"}, []string{"[exit status 3]"}, false},
		{"stdin is empty", map[string]any{"command": "cat; echo done"}, []string{"done"}, false},
		{"no command", map[string]any{"action": "exec"}, []string{"needs a command"}, true},
		{"unknown action", map[string]any{"command": "ls", "action": "run"}, []string{`unknown action "run"`}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, b, "o1", tt.input)
			for _, w := range tt.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result %q does not contain %q", res.Text, w)
				}
			}
			if res.IsError != tt.isError {
				t.Errorf("IsError = %v, want %v (%q)", res.IsError, tt.isError, res.Text)
			}
		})
	}
}

func TestBashInheritsWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	res := call(t, newTestBash(t), "o1", map[string]any{"command": "pwd"})
	real, _ := filepath.EvalSymlinks(dir)
	if !strings.Contains(res.Text, real) {
		t.Fatalf("pwd = %q, want %s", res.Text, real)
	}
}

func TestBashUnknownFieldRejectedBeforeRunning(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	res := call(t, newTestBash(t), "o1", map[string]any{"command": "touch " + marker, "cwd": "/tmp"})
	if !res.IsError || !strings.Contains(res.Text, `"cwd"`) || !strings.Contains(res.Text, "nothing was run") {
		t.Fatalf("result = %+v, want an error naming the field", res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although its input was rejected")
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// waitGone polls, bounded, for a process to disappear.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBashTimeoutKillsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	b := NewBash(BashOptions{DefaultTimeout: 300 * time.Millisecond})
	t.Cleanup(b.Close)
	res := call(t, b, "o1", map[string]any{"command": "sleep 30 & echo $! > " + pidFile + "; wait"})
	if !res.IsError || !strings.Contains(res.Text, "timeout") {
		t.Fatalf("result = %+v, want a timeout error", res)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	waitGone(t, pid)
}

func TestBashCancelKillsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	b := newTestBash(t)
	ctx, cancel := contextWithCancel(t)
	done := make(chan Result, 1)
	go func() {
		in, _ := json.Marshal(map[string]any{"command": "sleep 30 & echo $! > " + pidFile + "; wait"})
		done <- b.Call(ctx, "o1", in)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if raw, err := os.ReadFile(pidFile); err == nil && len(raw) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	res := <-done
	if !res.IsError || !strings.Contains(res.Text, "cancelled") {
		t.Fatalf("result = %+v, want a cancelled error", res)
	}
	raw, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	waitGone(t, pid)
}

func TestBashOutputBounded(t *testing.T) {
	b := NewBash(BashOptions{OutputLimit: 1000})
	t.Cleanup(b.Close)
	res := call(t, b, "o1", map[string]any{"command": "echo START; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END"})
	if len(res.Text) > 2500 {
		t.Fatalf("output is %d bytes, want it bounded", len(res.Text))
	}
	for _, w := range []string{"START", "END", "bytes omitted", "[exit status 0]"} {
		if !strings.Contains(res.Text, w) {
			t.Errorf("bounded output lacks %q: %q", w, res.Text)
		}
	}
}

func TestBashSessions(t *testing.T) {
	b := newTestBash(t)
	res := call(t, b, "o1", map[string]any{"action": "start", "command": "bash --noprofile --norc"})
	if res.IsError || !strings.HasPrefix(res.Text, "session_id: b1") {
		t.Fatalf("start = %+v", res)
	}
	res = call(t, b, "o1", map[string]any{"action": "write", "session_id": "b1", "input": "x=41; echo $((x+1))\n"})
	if !strings.Contains(res.Text, "42") {
		t.Fatalf("write = %+v, want 42", res)
	}
	// state persists across writes
	res = call(t, b, "o1", map[string]any{"action": "write", "session_id": "b1", "input": "echo x=$x\n"})
	if !strings.Contains(res.Text, "x=41") {
		t.Fatalf("write = %+v, want x=41", res)
	}
	// read returns only new output
	res = call(t, b, "o1", map[string]any{"action": "read", "session_id": "b1"})
	if strings.Contains(res.Text, "42") {
		t.Errorf("read repeated old output: %q", res.Text)
	}
	// another owner cannot see or touch it
	for _, action := range []string{"read", "write", "kill"} {
		res = call(t, b, "o2", map[string]any{"action": action, "session_id": "b1", "input": "echo hi\n"})
		if !res.IsError || !strings.Contains(res.Text, "unknown here") {
			t.Errorf("%s by another owner = %+v, want unknown", action, res)
		}
	}
	if res := call(t, b, "o2", map[string]any{"action": "list"}); strings.Contains(res.Text, "b1") {
		t.Errorf("another owner lists b1: %q", res.Text)
	}
	if res := call(t, b, "o1", map[string]any{"action": "list"}); !strings.Contains(res.Text, "b1\trunning") {
		t.Errorf("list = %q", res.Text)
	}
	// an exited session stays listed with its output
	call(t, b, "o1", map[string]any{"action": "write", "session_id": "b1", "input": "echo bye; exit 7\n"})
	inv := b.Inventory("o1").([]BashSessionInfo)
	if len(inv) != 1 || !strings.Contains(inv[0].State, "exit status 7") || !strings.Contains(inv[0].Tail, "bye") {
		t.Fatalf("inventory = %+v, want the exited session with its output", inv)
	}
	res = call(t, b, "o1", map[string]any{"action": "write", "session_id": "b1", "input": "echo again\n"})
	if !res.IsError || !strings.Contains(res.Text, "exited") {
		t.Errorf("write to an exited session = %+v", res)
	}
}

func TestBashKillAndRelease(t *testing.T) {
	b := newTestBash(t)
	pids := map[string]int{}
	for _, owner := range []string{"o1", "o2"} {
		res := call(t, b, owner, map[string]any{"action": "start", "command": "echo $$; exec sleep 60"})
		fields := strings.Fields(strings.TrimPrefix(res.Text, "session_id: b1"))
		if len(fields) == 0 {
			t.Fatalf("start output = %q", res.Text)
		}
		pid, err := strconv.Atoi(fields[0])
		if err != nil {
			t.Fatalf("start output = %q", res.Text)
		}
		pids[owner] = pid
	}
	res := call(t, b, "o1", map[string]any{"action": "kill", "session_id": "b1"})
	if res.IsError || !strings.Contains(res.Text, "killed") {
		t.Fatalf("kill = %+v", res)
	}
	waitGone(t, pids["o1"])
	if !alive(pids["o2"]) {
		t.Fatal("killing o1's session ended o2's")
	}
	b.Release("o2")
	waitGone(t, pids["o2"])
}
