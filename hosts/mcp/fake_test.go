package mcp

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fake returns the configuration of the fake server (this test binary, see fakeServer),
// whose scratch directory is dir.
func fake(t testing.TB, dir string) Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Server{Name: "fake", Command: exe, Env: map[string]string{"MCPTEST_FAKE": "1", "MCPTEST_DIR": dir}}
}

// A server that crashes in the middle of a call: the call's outcome is unknown (it ran:
// its marker is there), the next calls answer that the server is not running until the
// backoff has passed, then a new process serves them. The backoff doubles with each crash
// in a row.
func TestCrashMidCall(t *testing.T) {
	dir := t.TempDir()
	clk := newClock()
	s := newSet(t, Options{Servers: []Server{fake(t, dir)}, Now: clk.Now})
	s.Discover(t.Context())

	pid1 := call(t, s, "o1", "mcp__fake__pid", `{}`)
	wantText(t, "pid", pid1)
	marker := filepath.Join(dir, "marker")
	res := call(t, s, "o1", "mcp__fake__crash", `{"marker":"`+marker+`"}`)
	if !res.Unknown {
		t.Fatalf("the call the server crashed in = %+v, want an unknown outcome", res)
	}
	for _, want := range []string{"mcp server fake ended while this call was in flight", "exit status 3", "fake: crashing on purpose",
		"outcome is unknown", "Inspect its effects before repeating it", "starts it again on the next call after 12:00:01 (in 1s)"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("unknown outcome %q lacks %q", res.Text, want)
		}
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the crash tool did not run: %v", err)
	}

	wantError(t, "pid during the backoff", call(t, s, "o1", "mcp__fake__pid", `{}`),
		"mcp server fake is not running: its process ended (exit status 3)", "crashing on purpose", "in 1s")
	clk.Add(time.Second)
	pid2 := call(t, s, "o1", "mcp__fake__pid", `{}`)
	wantText(t, "pid after the backoff", pid2)
	if pid2.Text == pid1.Text {
		t.Errorf("pid after the restart = %s, want a new process", pid2.Text)
	}

	// Crashes in a row double the backoff; a call the server answers starts it over.
	if res := call(t, s, "o1", "mcp__fake__crash", `{"marker":"`+marker+`"}`); !res.Unknown || !strings.Contains(res.Text, "(in 1s)") {
		t.Fatalf("crash after an answered call = %+v, want an unknown outcome and a 1 s backoff", res)
	}
	clk.Add(time.Second)
	if res := call(t, s, "o1", "mcp__fake__crash", `{"marker":"`+marker+`"}`); !res.Unknown || !strings.Contains(res.Text, "(in 2s)") {
		t.Fatalf("second crash in a row = %+v, want an unknown outcome and a 2 s backoff", res)
	}
	clk.Add(time.Second)
	wantError(t, "pid 1 s after the second crash in a row", call(t, s, "o1", "mcp__fake__pid", `{}`), "is not running", "in 1s")
	clk.Add(time.Second)
	wantText(t, "pid 2 s after the second crash in a row", call(t, s, "o1", "mcp__fake__pid", `{}`))

	// Another session's server was never affected.
	wantText(t, "pid for another owner", call(t, s, "o2", "mcp__fake__pid", `{}`))
}

// A call that outlives the tool timeout is cancelled on the server, which sees it
// (notifications/cancelled ends the handler's context); the server goes on serving.
func TestToolTimeoutCancels(t *testing.T) {
	dir := t.TempDir()
	srv := fake(t, dir)
	srv.ToolTimeout = 500 * time.Millisecond
	s := newSet(t, Options{Servers: []Server{srv}})
	s.Discover(t.Context())
	start := time.Now()
	wantError(t, "block", call(t, s, "o1", "mcp__fake__block", `{}`), "did not answer within 500ms (tool_timeout_secs)", "notifications/cancelled")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("block returned after %v, want soon after 500ms", d)
	}
	// The notification is sent after the call returns; the echo after it is ordered
	// behind it on the same stdin, so once echo answers, the server has read it.
	wantText(t, "echo after the timeout", call(t, s, "o1", "mcp__fake__echo", `{"text":"hi"}`), "hi")
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "cancelled"))
		if err == nil && strings.HasPrefix(string(b), "cancelled: ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not see the cancellation: %q, %v", b, err)
		}
		wantText(t, "echo", call(t, s, "o1", "mcp__fake__echo", `{"text":"hi"}`), "hi") // a round trip, not a sleep
	}
}

// A command that does not exist: discovery says why, and a call of a server whose
// command went missing answers an error naming the server; neither stops anything else.
func TestCommandMissing(t *testing.T) {
	s := newSet(t, Options{Servers: []Server{{Name: "nope", Command: "myco-no-such-mcp-server"}}})
	s.Discover(t.Context())
	st := s.Statuses()
	if len(st) != 1 || st[0].Listed || !strings.Contains(st[0].Err, `"myco-no-such-mcp-server" is not found in the PATH the server gets`) || st[0].RetryAt.IsZero() {
		t.Errorf("Statuses() = %+v, want nope not listed, with why and when it is tried again", st)
	}
	if len(s.Tools()) != 0 {
		t.Errorf("Tools() = %v, want none", s.Tools())
	}

	// A server that listed its tools, whose command then went missing.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "fake-mcp")); err != nil {
		t.Fatal(err)
	}
	srv := fake(t, t.TempDir())
	srv.Command, srv.Env["PATH"] = "fake-mcp", bin
	s = newSet(t, Options{Servers: []Server{srv}})
	s.Discover(t.Context())
	wantText(t, "o1 takes the instance discovery started", call(t, s, "o1", "mcp__fake__echo", `{"text":"a"}`), "a")
	if err := os.Remove(filepath.Join(bin, "fake-mcp")); err != nil {
		t.Fatal(err)
	}
	wantError(t, "o2 starts its own", call(t, s, "o2", "mcp__fake__echo", `{"text":"b"}`),
		"mcp server fake did not start:", `"fake-mcp" is not found in the PATH the server gets`, "starts it again on the next call after")
	wantText(t, "o1 is not affected", call(t, s, "o1", "mcp__fake__echo", `{"text":"c"}`), "c")
}

// The instance discovery started serves the first owner; each other owner gets its own;
// Release ends an owner's, and the fake server gets only PATH, HOME, LANG and its env.
func TestLifetimes(t *testing.T) {
	reaper := &fakeReaper{tracked: map[int]bool{}}
	s := newSet(t, Options{Servers: []Server{fake(t, t.TempDir())}, Reaper: reaper, LookupEnv: func(k string) (string, bool) {
		v, ok := map[string]string{"PATH": "/usr/bin:/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "ANTHROPIC_API_KEY": "sk-secret"}[k]
		return v, ok
	}})
	running := func() int { return s.Statuses()[0].Running }
	s.Discover(t.Context())
	if n := running(); n != 1 {
		t.Fatalf("after Discover %d instances run, want 1", n)
	}
	pidA := call(t, s, "a", "mcp__fake__pid", `{}`).Text
	if n := running(); n != 1 {
		t.Errorf("after a's first call %d instances run, want 1 (a took discovery's)", n)
	}
	pidB := call(t, s, "b", "mcp__fake__pid", `{}`).Text
	if n := running(); n != 2 || pidA == pidB {
		t.Errorf("after b's call %d instances run, pids %s and %s; want 2 processes", n, pidA, pidB)
	}
	if got := call(t, s, "a", "mcp__fake__pid", `{}`).Text; got != pidA {
		t.Errorf("a's second call ran in %s, want its own %s", got, pidA)
	}
	env := call(t, s, "a", "mcp__fake__env", `{}`)
	wantText(t, "env", env)
	got := strings.Fields(env.Text)
	want := []string{"HOME=/home/u", "LANG=C.UTF-8", "MCPTEST_DIR=", "MCPTEST_FAKE=1", "PATH=/usr/bin:/bin"}
	if len(got) != len(want) {
		t.Errorf("the server's environment = %q, want %q", got, want)
	}
	for i := range min(len(got), len(want)) {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("the server's environment = %q, want %q", got, want)
		}
	}

	s.Release("a")
	s.Release("b")
	s.Close() // waits for the processes
	for _, pid := range []string{pidA, pidB} {
		var n int
		for _, c := range pid {
			n = n*10 + int(c-'0')
		}
		if err := syscall.Kill(n, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("server process %d after Release and Close: kill 0 = %v, want ESRCH", n, err)
		}
	}
	wantError(t, "a call after Close", call(t, s, "a", "mcp__fake__pid", `{}`), "shutting down")
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	if reaper.prepared < 2 || len(reaper.tracked) != 2 {
		t.Errorf("the reaper was prepared %d times and saw groups %v, want the 2 server processes", reaper.prepared, reaper.tracked)
	}
	for pgid, live := range reaper.tracked {
		if live {
			t.Errorf("process group %d is still tracked after Close", pgid)
		}
	}
}

// fakeReaper records the process groups it is told about.
type fakeReaper struct {
	mu       sync.Mutex // guards the fields below
	prepared int
	tracked  map[int]bool // pgid -> still tracked
}

func (r *fakeReaper) Prepare() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prepared++
}

func (r *fakeReaper) Track(pgid int) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tracked[pgid] = true
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.tracked[pgid] = false
	}
}

// Names that break the providers' rule are mapped, stably, with the server's name of the
// tool in the description; results are capped; structured content comes as JSON text.
func TestFakeResults(t *testing.T) {
	s := newSet(t, Options{Servers: []Server{fake(t, t.TempDir())}})
	s.Discover(t.Context())
	name, mapped := ExposedName("fake", "weird.name/x")
	if !mapped {
		t.Fatalf("ExposedName(fake, weird.name/x) = %s, not mapped", name)
	}
	weird := tool(t, s, name)
	if weird.Remote() != "weird.name/x" || !weird.Mapped() || !strings.Contains(weird.Spec().Description, `The MCP server fake calls this tool "weird.name/x"`) {
		t.Errorf("mapped tool = %s %q %q", weird.Name(), weird.Remote(), weird.Spec().Description)
	}
	wantText(t, "the mapped tool", call(t, s, "o", name, `{}`), "weird")

	big := call(t, s, "o", "mcp__fake__big", `{}`)
	wantText(t, "big", big, "[myco: the result was truncated: 262144 of 307200 bytes shown")
	if len(big.Text) > 262144+300 {
		t.Errorf("big = %d bytes, want about 256 KiB", len(big.Text))
	}
	wantText(t, "structured", call(t, s, "o", "mcp__fake__structured", `{}`), `{"sky":"clear","temperature":21.5}`)
	wantError(t, "a call with an array", call(t, s, "o", "mcp__fake__echo", `[1]`), "must be a JSON object")

	// A protocol error (here: a tool the server does not have, as after an upgrade of
	// the server) is an error the model sees, and the server goes on.
	gone := *tool(t, s, "mcp__fake__echo")
	gone.remote = "removed-tool"
	wantError(t, "a tool the server no longer has", gone.Call(t.Context(), "o", []byte(`{}`)), "mcp server fake refused the call: ", "removed-tool", "JSON-RPC error")
	wantText(t, "echo after the refusal", call(t, s, "o", "mcp__fake__echo", `{"text":"ok"}`), "ok")
}
