package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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

func newTestBash(t *testing.T, o BashOptions) *Bash {
	if o.SettleQuiet == 0 {
		o.SettleQuiet = 100 * time.Millisecond
	}
	b := NewBash(o)
	t.Cleanup(b.Close)
	return b
}

func TestBashExec(t *testing.T) {
	b := newTestBash(t, BashOptions{})
	tests := []struct {
		name    string
		input   map[string]any
		want    []string
		isError bool
	}{
		{"action defaults to exec", map[string]any{"command": "echo hi"}, []string{"hi\n[exit status 0]"}, false},
		{"stderr is combined", map[string]any{"command": "echo out; echo err >&2"}, []string{"out\nerr\n"}, false},
		{"nonzero exit is reported, not an error", map[string]any{"command": "exit 3", "action": "exec"}, []string{"[exit status 3]"}, false},
		{"signal is reported", map[string]any{"command": "kill -TERM $$"}, []string{"[killed by signal terminated]"}, false},
		{"stdin is /dev/null", map[string]any{"command": "cat; echo done"}, []string{"done"}, false},
		{"no trailing newline", map[string]any{"command": "printf x"}, []string{"x\n[exit status 0]"}, false},
		{"no command", map[string]any{"action": "exec"}, []string{"action=exec needs command"}, true},
		{"empty command", map[string]any{"command": "  "}, []string{"command is empty"}, true},
		{"unknown action", map[string]any{"command": "ls", "action": "run"}, []string{`unknown action "run"`}, true},
		{"exec takes no session_id", map[string]any{"command": "ls", "session_id": "b1"}, []string{"action=exec does not take session_id"}, true},
		{"timeout over the max", map[string]any{"command": "ls", "timeout_secs": 601}, []string{"timeout_secs must be more than 0 and at most 600, not 601"}, true},
		{"negative timeout", map[string]any{"command": "ls", "timeout_secs": -1}, []string{"timeout_secs must be"}, true},
		{"wrong type", map[string]any{"command": 7}, []string{"field command must be a string"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, b, "o1", tt.input)
			for _, w := range tt.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("Call(%v) = %q, want it to contain %q", tt.input, res.Text, w)
				}
			}
			if res.IsError != tt.isError {
				t.Errorf("Call(%v).IsError = %v, want %v (%q)", tt.input, res.IsError, tt.isError, res.Text)
			}
		})
	}
}

func TestBashInheritsWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	res := call(t, newTestBash(t, BashOptions{}), "o1", map[string]any{"command": "pwd"})
	real, _ := filepath.EvalSymlinks(dir)
	if !strings.Contains(res.Text, real) {
		t.Fatalf("pwd = %q, want %s", res.Text, real)
	}
}

func TestBashUnknownFieldRejectedBeforeRunning(t *testing.T) {
	b := newTestBash(t, BashOptions{})
	for _, field := range []string{"cwd", "workdir", "env"} {
		t.Run(field, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			for _, action := range []string{"exec", "start"} {
				res := call(t, b, "o1", map[string]any{"action": action, "command": "touch " + marker, field: "/tmp"})
				if !res.IsError || !strings.Contains(res.Text, `unknown field "`+field+`"`) || !strings.Contains(res.Text, "nothing was run") {
					t.Errorf("%s with %s = %+v, want an error naming the field", action, field, res)
				}
			}
			if field != "env" && !strings.Contains(call(t, b, "o1", map[string]any{"command": "ls", field: "/"}).Text, "cd /path && command") {
				t.Errorf("the error for %s does not point to cd", field)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran although its input was rejected")
			}
		})
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// the state follows the parenthesized command name
	rest := stat[strings.LastIndexByte(string(stat), ')')+1:]
	return !strings.HasPrefix(strings.TrimSpace(string(rest)), "Z")
}

// waitGone polls, bounded, for a process to disappear.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for alive(pid) {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("process %d is still alive", pid)
		}
	}
}

// waitFile polls, bounded, for a file to have content, and returns it.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for {
		if raw, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(raw), "\n") {
			return string(raw)
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s was never written", path)
		}
	}
}

func pidIn(t *testing.T, s string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("no pid in %q", s)
	}
	return pid
}

func TestBashTimeoutKillsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	b := newTestBash(t, BashOptions{})
	start := time.Now()
	res := call(t, b, "o1", map[string]any{"command": "echo before; sleep 30 & echo $! > " + pidFile + "; wait", "timeout_secs": 0.5})
	if !res.IsError || !strings.Contains(res.Text, "before\n[killed after timeout 0.5s]") {
		t.Fatalf("result = %+v, want a timeout error after the output", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("exec took %s after a 0.5 s timeout", d)
	}
	waitGone(t, pidIn(t, waitFile(t, pidFile)))
}

func TestBashExecLeavesNothingBehind(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	b := newTestBash(t, BashOptions{})
	// The backgrounded sleep holds the output pipe; exec must neither wait for it nor
	// leave it running.
	res := call(t, b, "o1", map[string]any{"command": "sleep 30 & echo $! > " + pidFile + "; echo done"})
	if res.IsError || !strings.Contains(res.Text, "done\n[exit status 0]") {
		t.Fatalf("result = %+v", res)
	}
	waitGone(t, pidIn(t, waitFile(t, pidFile)))
}

func TestBashCancelAndReleaseKillExec(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		stop       func(b *Bash, cancel func())
	}{
		{"cancel", "[killed: the call was cancelled]", func(b *Bash, cancel func()) { cancel() }},
		{"release", "bash resources were released", func(b *Bash, cancel func()) { b.Release("o1") }},
		{"close", "the host is shutting down", func(b *Bash, cancel func()) { b.Close() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			b := newTestBash(t, BashOptions{})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan Result, 1)
			go func() {
				in, _ := json.Marshal(map[string]any{"command": "sleep 30 & echo $! > " + pidFile + "; wait"})
				done <- b.Call(ctx, "o1", in)
			}()
			pid := pidIn(t, waitFile(t, pidFile))
			tt.stop(b, cancel)
			res := <-done
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Fatalf("result = %+v, want %q", res, tt.want)
			}
			waitGone(t, pid)
		})
	}
}

func TestBashOutputBounded(t *testing.T) {
	b := newTestBash(t, BashOptions{MaxOutputBytes: 1000})
	res := call(t, b, "o1", map[string]any{"command": "echo START; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END"})
	if len(res.Text) > 1100 {
		t.Fatalf("output is %d bytes, want it bounded", len(res.Text))
	}
	for _, w := range []string{"START", "END\n[exit status 0]", "\n[... 99011 bytes omitted ...]\n"} {
		if !strings.Contains(res.Text, w) {
			t.Errorf("bounded output lacks %q: %q", w, res.Text)
		}
	}
}

func TestBashSessions(t *testing.T) {
	// The first output of a start must come within the quiet period, which the test's
	// 100 ms missed under -race on a loaded machine (the echo ran after it).
	b := newTestBash(t, BashOptions{SettleQuiet: 500 * time.Millisecond})
	res := call(t, b, "o1", map[string]any{"action": "start", "command": "echo ready; bash --noprofile --norc"})
	if res.IsError || res.Text != "session_id: b1\nready\n[session b1: running]" {
		t.Fatalf("start = %+v", res)
	}
	// input is sent with a newline added
	res = call(t, b, "o1", map[string]any{"action": "write", "session_id": "b1", "input": "x=41; echo $((x+1))"})
	if res.Text != "42\n[session b1: running]" {
		t.Fatalf("write = %+v, want 42", res)
	}
	res = call(t, b, "o1", map[string]any{"action": "write", "session_id": "b1", "input": "echo x=$x\n"})
	if !strings.Contains(res.Text, "x=41") {
		t.Fatalf("write = %+v, want x=41: the shell keeps its state", res)
	}
	if res = call(t, b, "o1", map[string]any{"action": "read", "session_id": "b1"}); res.Text != "[no new output]\n[session b1: running]" {
		t.Errorf("read = %q, want no new output", res.Text)
	}
	// read with timeout_secs waits for output that comes later
	call(t, b, "o1", map[string]any{"action": "write", "session_id": "b1", "input": "(sleep 0.4; echo later) &", "timeout_secs": 0.1})
	if res = call(t, b, "o1", map[string]any{"action": "read", "session_id": "b1", "timeout_secs": 10}); !strings.Contains(res.Text, "later") {
		t.Errorf("read with a wait = %q, want later", res.Text)
	}
	if res := call(t, b, "o1", map[string]any{"action": "list"}); !strings.Contains(res.Text, "b1\trunning\t") {
		t.Errorf("list = %q", res.Text)
	}
	// an exited session stays listed with its output
	res = call(t, b, "o1", map[string]any{"action": "write", "session_id": "b1", "input": "echo bye; exit 7\n"})
	if res.Text != "bye\n[session b1: exited, exit status 7]" {
		t.Errorf("write of exit = %q", res.Text)
	}
	inv := b.Sessions("o1")
	if len(inv) != 1 || inv[0].State != "exited" || inv[0].ExitCode != 7 || !strings.Contains(inv[0].Tail, "bye") || inv[0].Command != "echo ready; bash --noprofile --norc" {
		t.Fatalf("inventory = %+v, want the exited session with its output", inv)
	}
	res = call(t, b, "o1", map[string]any{"action": "write", "session_id": "b1", "input": "echo again\n"})
	if !res.IsError || !strings.Contains(res.Text, "has exited (exit status 7)") {
		t.Errorf("write to an exited session = %+v", res)
	}
	if res := call(t, b, "o1", map[string]any{"action": "start", "command": "cat"}); !strings.HasPrefix(res.Text, "session_id: b2\n") {
		t.Errorf("second start = %q, want b2", res.Text)
	}
	if res := call(t, b, "o1", map[string]any{"action": "kill", "session_id": "b1"}); res.IsError || !strings.Contains(res.Text, "b1 is killed and forgotten") {
		t.Errorf("kill of the exited session = %+v", res)
	}
	if res := call(t, b, "o1", map[string]any{"action": "list"}); strings.Contains(res.Text, "b1") || !strings.Contains(res.Text, "b2") {
		t.Errorf("list after kill = %q", res.Text)
	}
}

func TestBashSessionOwners(t *testing.T) {
	b := newTestBash(t, BashOptions{})
	pids := map[string]int{}
	for _, owner := range []string{"o1", "o2"} {
		res := call(t, b, owner, map[string]any{"action": "start", "command": "echo $$; exec sleep 60"})
		if !strings.HasPrefix(res.Text, "session_id: b1\n") {
			t.Fatalf("start for %s = %q", owner, res.Text)
		}
		pids[owner] = pidIn(t, strings.Split(res.Text, "\n")[1])
	}
	b.Release("o3") // nothing of o3's: harmless
	// o2 cannot reach o1's sessions; b1 of o2 is its own.
	call(t, b, "o1", map[string]any{"action": "kill", "session_id": "b1"})
	waitGone(t, pids["o1"])
	for _, action := range []string{"read", "write", "kill"} {
		in := map[string]any{"action": action, "session_id": "b1"}
		if action == "write" {
			in["input"] = "x"
		}
		res := call(t, b, "o1", in)
		want := `bash session "b1" is unknown here (sessions are per host and per session runtime; use action=list)`
		if !res.IsError || res.Text != want {
			t.Errorf("%s of a killed session = %q, want %q", action, res.Text, want)
		}
	}
	if !alive(pids["o2"]) {
		t.Fatal("killing o1's b1 ended o2's b1")
	}
	if got := b.Sessions("o1"); len(got) != 0 {
		t.Errorf("Sessions(o1) = %+v, want none", got)
	}
	b.Release("o2")
	waitGone(t, pids["o2"])
	if res := call(t, b, "o2", map[string]any{"action": "list"}); res.Text != "no bash sessions (action=start starts one)" {
		t.Errorf("list after Release = %q", res.Text)
	}
}

func TestBashOwnerIsolation(t *testing.T) {
	b := newTestBash(t, BashOptions{})
	call(t, b, "A", map[string]any{"action": "start", "command": "exec sleep 60"})
	for _, action := range []string{"read", "write", "kill"} {
		in := map[string]any{"action": action, "session_id": "b1"}
		if action == "write" {
			in["input"] = "x"
		}
		if res := call(t, b, "B", in); !res.IsError || !strings.Contains(res.Text, "unknown here") {
			t.Errorf("%s by B = %+v, want unknown", action, res)
		}
	}
	if res := call(t, b, "B", map[string]any{"action": "list"}); strings.Contains(res.Text, "b1") {
		t.Errorf("B lists A's session: %q", res.Text)
	}
	if got := b.Sessions("A"); len(got) != 1 || got[0].State != "running" {
		t.Errorf("A's sessions after B's attempts = %+v", got)
	}
}

func TestBashCloseKillsSessions(t *testing.T) {
	b := NewBash(BashOptions{SettleQuiet: 50 * time.Millisecond})
	res := call(t, b, "o1", map[string]any{"action": "start", "command": "echo $$; exec sleep 60"})
	pid := pidIn(t, strings.Split(res.Text, "\n")[1])
	b.Close()
	waitGone(t, pid)
	if res := call(t, b, "o1", map[string]any{"command": "echo hi"}); !res.IsError || !strings.Contains(res.Text, "shut down") {
		t.Errorf("exec after Close = %+v", res)
	}
}

// fakeReaper records what the bash tool tells a reaper.
type fakeReaper struct {
	mu     sync.Mutex // guards events
	events []string
}

func (f *fakeReaper) Prepare() { f.add("prepare") }

func (f *fakeReaper) Track(pgid int) func() {
	f.add("+" + strconv.Itoa(pgid))
	return func() { f.add("-" + strconv.Itoa(pgid)) }
}

func (f *fakeReaper) add(e string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
}

func (f *fakeReaper) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.events)
}

// TestBashTellsReaper: every process group the tool starts, exec and start alike, is
// prepared for before it starts, tracked once it runs and untracked once it has ended.
func TestBashTellsReaper(t *testing.T) {
	r := &fakeReaper{}
	b := newTestBash(t, BashOptions{Reaper: r})
	res := call(t, b, "o1", map[string]any{"command": "echo $$"})
	pid := pidIn(t, strings.TrimSuffix(res.Text, "[exit status 0]"))
	if got, want := r.took(), []string{"prepare", fmt.Sprint("+", pid), fmt.Sprint("-", pid)}; !slices.Equal(got, want) {
		t.Fatalf("after exec: reaper events = %v, want %v", got, want)
	}
	res = call(t, b, "o1", map[string]any{"action": "start", "command": "echo $$; exec sleep 60"})
	spid := pidIn(t, strings.Split(res.Text, "\n")[1])
	if got := r.took(); !slices.Equal(got[3:], []string{"prepare", fmt.Sprint("+", spid)}) {
		t.Fatalf("after start: reaper events = %v, want +%d added", got, spid)
	}
	call(t, b, "o1", map[string]any{"action": "kill", "session_id": "b1"})
	if got := r.took(); !slices.Equal(got[3:], []string{"prepare", fmt.Sprint("+", spid), fmt.Sprint("-", spid)}) {
		t.Fatalf("after kill: reaper events = %v, want +%d, -%d", got, spid, spid)
	}
}
