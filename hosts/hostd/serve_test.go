package hostd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"myco.dev/hosts/proto"
	"myco.dev/internal/sshdtest"
)

// hostProc is the real binary in --mode host over pipes.
type hostProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	w      *proto.Writer
	r      *proto.Reader
	stderr *bytes.Buffer
	dir    string
	exited chan error
}

// startHost starts the host with a host daemon of the test's own.
func startHost(t *testing.T, maxImage int) *hostProc {
	t.Helper()
	return startHostIn(t, sshdtest.NewDaemonDir(t), maxImage)
}

// startHostIn starts the host with its daemon in daemonDir, with extra flags.
func startHostIn(t *testing.T, daemonDir string, maxImage int, extra ...string) *hostProc {
	t.Helper()
	h := &hostProc{dir: t.TempDir(), stderr: &bytes.Buffer{}, exited: make(chan error, 1)}
	args := append([]string{"--mode", "host", "--max-image-base64-bytes", strconv.Itoa(maxImage), "--host-dir", daemonDir}, extra...)
	h.cmd = exec.Command(mycoBin, args...)
	h.cmd.Dir = h.dir
	h.cmd.Stderr = h.stderr
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.w, h.r = proto.NewWriter(h.stdin), proto.NewReader(out)
	go func() { h.exited <- h.cmd.Wait() }()
	t.Cleanup(func() {
		h.stdin.Close()
		select {
		case <-h.exited:
		case <-time.After(5 * time.Second):
			h.cmd.Process.Kill()
			<-h.exited
		}
	})
	return h
}

func (h *hostProc) read(t *testing.T) proto.Msg {
	t.Helper()
	m, err := h.r.Read(t.Context())
	if err != nil {
		t.Fatalf("read from the host: %v (stderr: %s)", err, h.stderr)
	}
	return m
}

func (h *hostProc) send(t *testing.T, m proto.Msg) {
	t.Helper()
	if err := h.w.Write(m); err != nil {
		t.Fatalf("write to the host: %v", err)
	}
}

// handshake reads the host's hello and answers with a matching one.
func (h *hostProc) handshake(t *testing.T) proto.Hello {
	t.Helper()
	m := h.read(t)
	if m.Hello == nil {
		t.Fatalf("first frame = %+v, want a hello", m)
	}
	h.send(t, proto.Msg{Hello: &proto.Hello{Protocol: proto.Version, Version: "test"}})
	return *m.Hello
}

func (h *hostProc) waitExit(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.exited:
		h.exited <- err
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("the host did not exit (stderr: %s)", h.stderr)
		return nil
	}
}

func bashCall(id uint64, owner string, in map[string]any) proto.Msg {
	b, _ := json.Marshal(in)
	return proto.Msg{ID: id, Call: &proto.Call{Owner: owner, Tool: "bash", Input: b}}
}

func TestHostHello(t *testing.T) {
	h := startHost(t, 12345)
	got := h.handshake(t)
	if got.Protocol != proto.Version || got.Version == "" || got.OS != runtime.GOOS || got.Arch != runtime.GOARCH || got.MaxImageBase64Bytes != 12345 {
		t.Errorf("hello = %+v, want protocol %d, a version, %s/%s and the image cap 12345", got, proto.Version, runtime.GOOS, runtime.GOARCH)
	}
	if dir, _ := filepath.EvalSymlinks(h.dir); got.Dir != h.dir && got.Dir != dir {
		t.Errorf("hello dir = %q, want %q", got.Dir, h.dir)
	}
	if len(got.Instance) != 16 || got.PID <= 0 || got.PID == h.cmd.Process.Pid || got.GraceSecs != 1800 || got.NoDaemon != "" {
		t.Errorf("hello = %+v, want an instance id, the daemon's pid (not the proxy's %d), a 30 min grace and no no_daemon", got, h.cmd.Process.Pid)
	}
	h.send(t, proto.Msg{ID: 1, Ping: &struct{}{}})
	if m := h.read(t); m.ID != 1 || m.Pong == nil {
		t.Errorf("ping answered with %+v, want pong 1", m)
	}
}

// TestHostVersionMismatch: a controller of another protocol version gets a fatal error
// naming both versions, and the host exits with status 1 saying so on stderr, even when
// the controller closes its side at once (as a controller does on a mismatch), through
// the daemon and in-process.
func TestHostVersionMismatch(t *testing.T) {
	for _, tt := range []struct {
		name  string
		extra []string
	}{
		{"daemon", nil},
		{"in-process", []string{"--no-daemon"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := startHostIn(t, sshdtest.NewDaemonDir(t), 100, tt.extra...)
			hello := h.read(t)
			h.send(t, proto.Msg{Hello: &proto.Hello{Protocol: proto.Version + 1, Version: "9.9.9"}})
			m := h.read(t)
			h.stdin.Close()
			if m.Err == nil || !m.Err.Fatal {
				t.Fatalf("answer to a mismatched hello = %+v, want a fatal error", m)
			}
			for _, want := range []string{"9.9.9", hello.Hello.Version, fmt.Sprint(proto.Version), fmt.Sprint(proto.Version + 1), "install the same myco"} {
				if !strings.Contains(m.Err.Message, want) {
					t.Errorf("mismatch error %q lacks %q", m.Err.Message, want)
				}
			}
			h.wantExit1(t, "host protocol mismatch")
		})
	}
}

// wantExit1 waits for the host to exit and checks that it exited with status 1 and said
// why on stderr.
func (h *hostProc) wantExit1(t *testing.T, why string) {
	t.Helper()
	err := h.waitExit(t)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(h.stderr.String(), why) {
		t.Errorf("the host exited with %v, saying %q; want status 1 and %q", err, h.stderr, why)
	}
}

// TestHostRequestLineCap: a controller frame over proto.MaxRequestLine ends the
// connection with a fatal error that names the limit, and the host exits with status 1,
// through the daemon and in-process. The daemon serves the next connection.
func TestHostRequestLineCap(t *testing.T) {
	for _, tt := range []struct {
		name  string
		extra []string
	}{
		{"daemon", nil},
		{"in-process", []string{"--no-daemon"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := sshdtest.NewDaemonDir(t)
			h := startHostIn(t, dir, 100, tt.extra...)
			h.handshake(t)
			text := strings.Repeat("x", proto.MaxRequestLine)
			line := fmt.Sprintf(`{"id":1,"call":{"owner":"o1","tool":"str_replace_based_edit_tool","input":{"command":"create","path":"/tmp/x","file_text":"%s"}}}`+"\n", text)
			go io.WriteString(h.stdin, line) // the host may stop reading before the end
			m := h.read(t)
			if m.Err == nil || !m.Err.Fatal || !strings.Contains(m.Err.Message, fmt.Sprintf("over the %d bytes", proto.MaxRequestLine)) {
				t.Fatalf("answer to a frame over the limit = %+v, want a fatal error naming the limit", m)
			}
			h.stdin.Close()
			h.wantExit1(t, fmt.Sprintf("over the %d bytes", proto.MaxRequestLine))

			h2 := startHostIn(t, dir, 100, tt.extra...)
			h2.handshake(t)
			h2.send(t, proto.Msg{ID: 1, Ping: &struct{}{}})
			if m := h2.read(t); m.Pong == nil {
				t.Errorf("the next connection: ping answered with %+v", m)
			}
		})
	}
}

func TestHostFirstFrameNotHello(t *testing.T) {
	h := startHost(t, 100)
	h.read(t)
	h.send(t, proto.Msg{ID: 1, Ping: &struct{}{}})
	if m := h.read(t); m.Err == nil || !strings.Contains(m.Err.Message, "hello") {
		t.Errorf("answer = %+v, want an error asking for a hello", m)
	}
	h.waitExit(t)
}

// TestHostConcurrentCalls keeps 20 calls in flight: call 1 finishes only after calls 2 to
// 20 have each run (it waits for their marker files, bounded), so a host that served calls
// one at a time would leave it waiting; the others answer before it.
func TestHostConcurrentCalls(t *testing.T) {
	h := startHost(t, 100)
	h.handshake(t)
	const n = 20
	marks := t.TempDir()
	start := time.Now()
	for i := range n {
		id := i + 1
		cmd := fmt.Sprintf("touch %s/%d; echo call-%d", marks, id, id)
		if id == 1 {
			cmd = fmt.Sprintf("for i in $(seq 500); do [ $(ls %s | wc -l) -ge %d ] && break; sleep 0.02; done; sleep 0.3; echo call-1; ls %s | wc -l", marks, n-1, marks)
		}
		h.send(t, bashCall(uint64(id), "o1", map[string]any{"command": cmd}))
	}
	var order []uint64
	for range n {
		m := h.read(t)
		if m.Result == nil || m.Result.IsError {
			t.Fatalf("frame %+v, want a result", m)
		}
		if want := fmt.Sprintf("call-%d\n", m.ID); !strings.Contains(m.Result.Text, want) {
			t.Errorf("result of call %d = %q, want %q", m.ID, m.Result.Text, want)
		}
		order = append(order, m.ID)
	}
	if elapsed := time.Since(start); elapsed > 9*time.Second {
		t.Errorf("20 calls took %s; call 1 waited in vain for the others, which did not run while it was in flight", elapsed)
	}
	if order[0] == 1 {
		t.Errorf("responses came back in request order %v; want the calls that finished first answered first", order)
	}
	seen := map[uint64]bool{}
	for _, id := range order {
		seen[id] = true
	}
	if len(seen) != n {
		t.Errorf("answered ids %v, want each of 1..%d once", order, n)
	}
}

func TestHostMalformedLines(t *testing.T) {
	h := startHost(t, 100)
	h.handshake(t)
	lines := []struct {
		line   string
		id     uint64
		reason string
	}{
		{"this is not json", 0, "malformed"},
		{`{"id":5}`, 5, "exactly one payload"},
		{`{"id":6,"ping":{},"pong":{}}`, 6, "exactly one payload"},
		{`{"ping":{}}`, 0, "nonzero id"},
		{`{"id":7,"call":{"owner":"o","tool":"grep","input":{}}}`, 7, `unknown tool "grep"`},
		{`{"id":8,"pong":{}}`, 8, "a host accepts"},
		{`{"id":9,"call":{"owner":"o","tool":"bash","input":{"command":"true","cwd":"/"}}}`, 9, `"cwd"`},
	}
	for _, l := range lines {
		if _, err := io.WriteString(h.stdin, l.line+"\n"); err != nil {
			t.Fatal(err)
		}
		m := h.read(t)
		msg := ""
		switch {
		case m.Err != nil:
			msg = m.Err.Message
		case m.Result != nil && m.Result.IsError:
			msg = m.Result.Text
		}
		if m.ID != l.id || !strings.Contains(msg, l.reason) {
			t.Errorf("line %s: answer %+v, want id %d and an error containing %q", l.line, m, l.id, l.reason)
		}
	}
	h.send(t, proto.Msg{ID: 10, Ping: &struct{}{}})
	if m := h.read(t); m.ID != 10 || m.Pong == nil {
		t.Errorf("after the malformed lines, ping answered with %+v", m)
	}
}

// childPIDs starts a bash session and an exec call in flight, and returns their pids.
func childPIDs(t *testing.T, h *hostProc) (session, inFlight int) {
	t.Helper()
	h.send(t, bashCall(1, "o1", map[string]any{"action": "start", "command": "echo pid=$$; exec sleep 1000"}))
	m := h.read(t)
	if m.Result == nil {
		t.Fatalf("start: %+v", m)
	}
	_, after, ok := strings.Cut(m.Result.Text, "pid=")
	if !ok {
		t.Fatalf("start printed %q", m.Result.Text)
	}
	session, _ = strconv.Atoi(strings.Fields(after)[0])
	pidFile := filepath.Join(t.TempDir(), "pid")
	h.send(t, bashCall(2, "o1", map[string]any{"command": "echo $$ > " + pidFile + "; exec sleep 1000"}))
	sshdtest.WaitFor(t, 5*time.Second, "the exec call wrote its pid", func() bool {
		b, err := os.ReadFile(pidFile)
		inFlight, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && inFlight > 0
	})
	if sshdtest.Gone(session) || sshdtest.Gone(inFlight) {
		t.Fatalf("children %d, %d are not running", session, inFlight)
	}
	return session, inFlight
}

// TestHostReleaseThenCloseKillsChildren: a controller that ends cleanly releases its
// owners and closes stdin; every process it started ends.
func TestHostReleaseThenCloseKillsChildren(t *testing.T) {
	h := startHost(t, 100)
	h.handshake(t)
	session, inFlight := childPIDs(t, h)
	h.send(t, proto.Msg{ID: 9, Release: &proto.Release{Owner: "o1"}})
	got := map[uint64]proto.Msg{}
	for len(got) < 2 {
		m := h.read(t)
		got[m.ID] = m
	}
	if got[9].Released == nil || got[2].Result == nil || !strings.Contains(got[2].Result.Text, "released") {
		t.Errorf("after the release: %+v, want released (9) and the exec call killed (2)", got)
	}
	h.stdin.Close()
	if err := h.waitExit(t); err != nil {
		t.Errorf("the host exited with %v after stdin closed, want 0 (stderr: %s)", err, h.stderr)
	}
	for _, pid := range []int{session, inFlight} {
		sshdtest.WaitFor(t, 5*time.Second, fmt.Sprintf("child %d outlived the release", pid), func() bool { return sshdtest.Gone(pid) })
	}
}

// TestHostNoDaemonStdinCloseKillsChildren: without the daemon, the host is the process
// that runs the tools, and stdin closing ends them all.
func TestHostNoDaemonStdinCloseKillsChildren(t *testing.T) {
	h := startHostIn(t, sshdtest.NewDaemonDir(t), 100, "--no-daemon")
	if hello := h.handshake(t); hello.PID != h.cmd.Process.Pid || hello.NoDaemon == "" {
		t.Errorf("hello = %+v, want the host's own pid %d and a no_daemon reason", hello, h.cmd.Process.Pid)
	}
	session, inFlight := childPIDs(t, h)
	h.stdin.Close()
	if err := h.waitExit(t); err != nil {
		t.Errorf("the host exited with %v after stdin closed, want 0 (stderr: %s)", err, h.stderr)
	}
	for _, pid := range []int{session, inFlight} {
		sshdtest.WaitFor(t, 5*time.Second, fmt.Sprintf("child %d outlived the host", pid), func() bool { return sshdtest.Gone(pid) })
	}
}

func TestHostDaemonSIGTERMKillsChildren(t *testing.T) {
	h := startHost(t, 100)
	hello := h.handshake(t)
	session, inFlight := childPIDs(t, h)
	syscall.Kill(hello.PID, syscall.SIGTERM)
	h.waitExit(t) // the daemon closed the connection, so the proxy ends
	for _, pid := range []int{session, inFlight} {
		sshdtest.WaitFor(t, 5*time.Second, fmt.Sprintf("child %d outlived the daemon", pid), func() bool { return sshdtest.Gone(pid) })
	}
}

// TestHostDropKeepsSessions closes the proxy's stdin without a release (a drop): the
// daemon keeps the bash session and the exec call in flight, both produce output while
// no one is connected, and a new proxy to the same daemon reads the session's output
// and fetches the call's result by key.
func TestHostDropKeepsSessions(t *testing.T) {
	dir := sshdtest.NewDaemonDir(t)
	h := startHostIn(t, dir, 100)
	hello := h.handshake(t)
	flag := filepath.Join(t.TempDir(), "go")
	wait := "while [ ! -e " + flag + " ]; do sleep 0.02; done; "
	h.send(t, bashCall(1, "o1", map[string]any{"action": "start", "command": "echo early pid=$$; " + wait + "echo late; exec sleep 1000"}))
	m := h.read(t)
	if m.Result == nil || !strings.Contains(m.Result.Text, "early") {
		t.Fatalf("start: %+v", m)
	}
	_, after, _ := strings.Cut(m.Result.Text, "pid=")
	session, _ := strconv.Atoi(strings.Fields(after)[0])
	call := bashCall(2, "o1", map[string]any{"command": wait + "echo exec-done"})
	call.Call.Key = "k2"
	h.send(t, call)
	h.stdin.Close()
	h.waitExit(t)

	if err := os.WriteFile(flag, nil, 0o644); err != nil { // after the drop
		t.Fatal(err)
	}
	h2 := startHostIn(t, dir, 100)
	if hello2 := h2.handshake(t); hello2.Instance != hello.Instance || hello2.PID != hello.PID {
		t.Fatalf("the second proxy reached daemon %s (pid %d), want %s (pid %d)", hello2.Instance, hello2.PID, hello.Instance, hello.PID)
	}
	h2.send(t, proto.Msg{ID: 1, Fetch: &proto.Fetch{Owner: "o1", Key: "k2"}})
	if m := h2.read(t); m.ID != 1 || m.Result == nil || !strings.Contains(m.Result.Text, "exec-done") {
		t.Errorf("fetch k2 = %+v, want the exec call's result", m)
	}
	h2.send(t, bashCall(2, "o1", map[string]any{"action": "read", "session_id": "b1", "timeout_secs": 5}))
	if m := h2.read(t); m.Result == nil || !strings.Contains(m.Result.Text, "late") || strings.Contains(m.Result.Text, "early") {
		t.Errorf("read b1 after the re-attach = %+v, want the output produced while disconnected", m.Result)
	}
	h2.send(t, proto.Msg{ID: 3, Fetch: &proto.Fetch{Owner: "o1", Key: "k2"}})
	if m := h2.read(t); m.Err == nil || !strings.Contains(m.Err.Message, "holds no call") {
		t.Errorf("a second fetch of k2 = %+v, want an error", m)
	}
	if sshdtest.Gone(session) {
		t.Fatalf("session %d ended", session)
	}
	h2.send(t, proto.Msg{ID: 4, Release: &proto.Release{Owner: "o1"}})
	h2.read(t)
	sshdtest.WaitFor(t, 5*time.Second, "the session outlived the release", func() bool { return sshdtest.Gone(session) })
}

// TestHostGraceReaps: a dropped owner's sessions end when the grace period passes.
func TestHostGraceReaps(t *testing.T) {
	dir := sshdtest.NewDaemonDir(t)
	h := startHostIn(t, dir, 100, "--host-grace", "300ms", "--host-idle", "100ms")
	if hello := h.handshake(t); hello.GraceSecs != 0 {
		t.Errorf("hello grace = %d s, want 0 (300 ms)", hello.GraceSecs)
	}
	session, _ := childPIDs(t, h)
	h.stdin.Close()
	h.waitExit(t)
	sshdtest.WaitFor(t, 5*time.Second, "the session outlived the grace period", func() bool { return sshdtest.Gone(session) })
	h2 := startHostIn(t, dir, 100)
	h2.handshake(t)
	h2.send(t, bashCall(1, "o1", map[string]any{"action": "read", "session_id": "b1"}))
	if m := h2.read(t); m.Result == nil || !strings.Contains(m.Result.Text, `"b1" is unknown`) {
		t.Errorf("read b1 after the grace period = %+v, want unknown", m)
	}
}

// TestHostConcurrentStartsOneDaemon starts five hosts at once on a directory with no
// daemon: the start lock lets one of them start it, and all five reach that one.
func TestHostConcurrentStartsOneDaemon(t *testing.T) {
	dir := sshdtest.NewDaemonDir(t)
	var hs []*hostProc
	for range 5 {
		hs = append(hs, startHostIn(t, dir, 100))
	}
	instances := map[string]bool{}
	for _, h := range hs {
		instances[h.handshake(t).Instance] = true
	}
	if len(instances) != 1 {
		t.Errorf("five hosts started at once reached daemons %v, want one", instances)
	}
	if pids, _ := filepath.Glob(filepath.Join(dir, "*.pid")); len(pids) != 1 {
		t.Errorf("pid files %v, want one", pids)
	}
}

// TestHostFallsBackWithoutDaemon: when no daemon can run (here its directory is a file),
// the host serves in its own process and says so on stderr.
func TestHostFallsBackWithoutDaemon(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	sshdtest.WriteFile(t, file, "x")
	h := startHostIn(t, file, 100)
	if hello := h.handshake(t); hello.PID != h.cmd.Process.Pid || hello.NoDaemon == "" {
		t.Errorf("hello = %+v, want the host's own pid %d and a no_daemon reason", hello, h.cmd.Process.Pid)
	}
	h.send(t, bashCall(1, "o1", map[string]any{"command": "echo ok"}))
	if m := h.read(t); m.Result == nil || !strings.Contains(m.Result.Text, "ok") {
		t.Errorf("call = %+v", m)
	}
	h.stdin.Close()
	h.waitExit(t)
	if !strings.Contains(h.stderr.String(), "serving in this process, without the host daemon") || !strings.Contains(h.stderr.String(), "not a directory") {
		t.Errorf("stderr = %q, want the fallback and its reason", h.stderr)
	}
}

// TestHostProgress runs an exec call that prints, sleeps and prints again, on the daemon
// and in-process. Asked for progress, the host sends a progress frame holding the first
// output while the call still runs, and none after its result (a later call of 1.2 s, past
// the throttle interval, shows none either); not asked, it sends none.
func TestHostProgress(t *testing.T) {
	for _, tt := range []struct {
		name     string
		extra    []string
		progress bool
	}{
		{"daemon", nil, true},
		{"daemon not asked", nil, false},
		{"in-process", []string{"--no-daemon"}, true},
		{"in-process not asked", []string{"--no-daemon"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := startHostIn(t, sshdtest.NewDaemonDir(t), 100, tt.extra...)
			h.handshake(t)
			call := bashCall(1, "o1", map[string]any{"command": "echo first; sleep 0.6; echo second"})
			call.Call.Progress = tt.progress
			h.send(t, call)
			var tails []string
			for {
				m := h.read(t)
				if m.ID != 1 {
					t.Fatalf("frame %+v, want one of call 1", m)
				}
				if m.Result != nil {
					if !strings.Contains(m.Result.Text, "first\nsecond\n") {
						t.Fatalf("result = %q", m.Result.Text)
					}
					break
				}
				if m.Progress == nil {
					t.Fatalf("frame %+v, want progress or the result", m)
				}
				tails = append(tails, m.Progress.Tail)
			}
			midRun := slices.ContainsFunc(tails, func(tail string) bool {
				return strings.Contains(tail, "first") && !strings.Contains(tail, "second")
			})
			switch {
			case tt.progress && !midRun:
				t.Errorf("progress before the result = %q, want one with the first output only (sent while the call ran)", tails)
			case !tt.progress && len(tails) > 0:
				t.Errorf("progress frames %q for a call that did not ask for them", tails)
			}
			h.send(t, bashCall(2, "o1", map[string]any{"command": "sleep 1.2; echo later"}))
			if m := h.read(t); m.ID != 2 || m.Result == nil {
				t.Errorf("after the result of call 1: %+v, want only the result of call 2", m)
			}
		})
	}
}
