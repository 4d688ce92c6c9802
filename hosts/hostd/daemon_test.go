package hostd

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"myco.dev/agent/model"
	"myco.dev/hosts/proto"
	"myco.dev/hosts/tools"
	"myco.dev/internal/needs"
	"myco.dev/internal/sshdtest"
)

// pipeConn is one in-process connection to a daemon.
type pipeConn struct {
	w    *proto.Writer
	r    *proto.Reader
	in   *io.PipeWriter
	done chan struct{}
}

func connect(t *testing.T, d *Daemon) *pipeConn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &pipeConn{w: proto.NewWriter(inW), r: proto.NewReader(outR), in: inW, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		d.Serve(t.Context(), inR, outW, &proto.Proxy{MaxImageBase64Bytes: 100})
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close(); outR.Close(); <-c.done })
	if m := c.read(t); m.Hello == nil || m.Hello.Instance != d.Instance() {
		t.Fatalf("first frame = %+v, want the daemon's hello", m)
	}
	c.send(t, proto.Msg{Hello: &proto.Hello{Protocol: proto.Version}})
	return c
}

func (c *pipeConn) send(t *testing.T, m proto.Msg) {
	t.Helper()
	if err := c.w.Write(m); err != nil {
		t.Fatal(err)
	}
}

func (c *pipeConn) read(t *testing.T) proto.Msg {
	t.Helper()
	m, err := c.r.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDaemonFetchAnsweredResult: a result answered on a connection that looked alive (the
// daemon noticed the drop late) stays fetchable on another connection for ResultTTL, once.
func TestDaemonFetchAnsweredResult(t *testing.T) {
	d := NewDaemon(Options{Tools: []tools.Tool{tools.NewBash(tools.BashOptions{})}, Log: testLog(t)})
	t.Cleanup(d.Close) // after the connections' cleanups
	old, next := connect(t, d), connect(t, d)
	fetch := func(id uint64, key string) proto.Msg {
		next.send(t, proto.Msg{ID: id, Fetch: &proto.Fetch{Owner: "o1", Key: key}})
		return next.read(t)
	}
	for _, key := range []string{"k1", "k2"} {
		old.send(t, proto.Msg{ID: 1, Call: &proto.Call{Owner: "o1", Tool: "bash", Input: json.RawMessage(`{"command":"echo ` + key + `"}`), Key: key}})
		if m := old.read(t); m.Result == nil || !strings.Contains(m.Result.Text, key) {
			t.Fatalf("call %s = %+v", key, m)
		}
	}
	if m := fetch(2, "k1"); m.Result == nil || !strings.Contains(m.Result.Text, "k1") {
		t.Errorf("fetch k1 = %+v, want the answered result", m)
	}
	if m := fetch(3, "k1"); m.Err == nil {
		t.Errorf("fetch k1 again = %+v, want an error", m)
	}
	d.housekeep(time.Now().Add(2 * time.Minute))
	if m := fetch(4, "k2"); m.Err == nil || !strings.Contains(m.Err.Message, "expired") {
		t.Errorf("fetch k2 after ResultTTL = %+v, want an error", m)
	}
	old.send(t, proto.Msg{ID: 5, Call: &proto.Call{Owner: "o1", Tool: "bash", Input: json.RawMessage(`{"command":"true"}`), Key: "k1"}})
	old.send(t, proto.Msg{ID: 6, Call: &proto.Call{Owner: "o1", Tool: "bash", Input: json.RawMessage(`{"command":"sleep 0.2"}`), Key: "k3"}})
	old.send(t, proto.Msg{ID: 7, Call: &proto.Call{Owner: "o1", Tool: "bash", Input: json.RawMessage(`{"command":"true"}`), Key: "k3"}})
	got := map[uint64]proto.Msg{}
	for range 3 {
		m := old.read(t)
		got[m.ID] = m
	}
	if got[5].Result == nil || got[6].Result == nil {
		t.Errorf("calls 5 (a fetched key used again) and 6 = %+v, %+v, want results", got[5], got[6])
	}
	if m := got[7]; m.Err == nil || !strings.Contains(m.Err.Message, "in use") {
		t.Errorf("a second call with key k3 = %+v, want an error", m)
	}
}

// TestDaemonIdleAndGrace: the daemon is idle only with no connection and no owner, and a
// dropped owner is released when its grace period passes.
func TestDaemonIdleAndGrace(t *testing.T) {
	d := NewDaemon(Options{Tools: []tools.Tool{tools.NewBash(tools.BashOptions{})}, Grace: time.Minute, IdleExit: time.Second, Log: testLog(t)})
	t.Cleanup(d.Close) // after the connections' cleanups
	now := time.Now()
	d.housekeep(now)
	if !d.housekeep(now.Add(2 * time.Second)) {
		t.Errorf("a new daemon with nothing to do is not idle after IdleExit")
	}
	c := connect(t, d)
	c.send(t, proto.Msg{ID: 1, Call: &proto.Call{Owner: "o1", Tool: "bash", Input: json.RawMessage(`{"action":"start","command":"exec cat"}`)}})
	c.read(t)
	c.in.Close()
	<-c.done
	now = time.Now()
	if d.housekeep(now) || d.housekeep(now.Add(30*time.Second)) {
		t.Errorf("the daemon is idle while a dropped owner is in its grace period")
	}
	d.housekeep(now.Add(61 * time.Second)) // reaps o1
	if !d.housekeep(now.Add(63 * time.Second)) {
		t.Errorf("the daemon is not idle after the grace period and IdleExit")
	}
	d.mu.Lock()
	n := len(d.owners)
	d.mu.Unlock()
	if n != 0 {
		t.Errorf("%d owners after the grace period, want none", n)
	}
}

// stuckTool is a tool whose calls ignore their ctx and end only when release is closed,
// as view_image did on a named pipe.
type stuckTool struct {
	entered chan struct{} // receives once per call that started
	release chan struct{}
}

func (s *stuckTool) Name() string { return "stuck" }

func (s *stuckTool) Spec() model.ToolSpec { return model.ToolSpec{Name: "stuck"} }

func (s *stuckTool) Call(ctx context.Context, owner string, input json.RawMessage) tools.Result {
	s.entered <- struct{}{}
	<-s.release
	return tools.Result{Text: "late"}
}

// TestDaemonCloseDeadline: a call that ignores its ctx keeps Close waiting only until
// CloseTimeout; the bash sessions are ended all the same.
func TestDaemonCloseDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := &stuckTool{entered: make(chan struct{}, 1), release: make(chan struct{})}
		d := NewDaemon(Options{Tools: []tools.Tool{stuck}, CloseTimeout: 3 * time.Second, Log: testLog(t)})
		c := connect(t, d)
		c.send(t, proto.Msg{ID: 1, Call: &proto.Call{Owner: "o1", Tool: "stuck"}})
		<-stuck.entered
		start := time.Now()
		d.Close()
		if waited := time.Since(start); waited != 3*time.Second {
			t.Errorf("Close with a stuck call returned after %s, want the CloseTimeout, 3s", waited)
		}
		close(stuck.release)
		c.in.Close()
		<-c.done
	})
}

// TestDaemonCloseWaitsForCalls: calls that end when their ctx ends are waited for, with
// no deadline reached.
func TestDaemonCloseWaitsForCalls(t *testing.T) {
	d := NewDaemon(Options{Tools: []tools.Tool{tools.NewBash(tools.BashOptions{})}, CloseTimeout: time.Minute, Log: testLog(t)})
	c := connect(t, d)
	started := filepath.Join(t.TempDir(), "started")
	c.send(t, proto.Msg{ID: 1, Call: &proto.Call{Owner: "o1", Tool: "bash", Input: json.RawMessage(`{"command":"touch ` + started + `; exec sleep 1000"}`)}})
	answer := make(chan proto.Msg, 1)
	go func() { // the call's answer must be read for the call to end
		m, _ := c.r.Read(t.Context())
		answer <- m
	}()
	start := time.Now()
	sshdtest.WaitFor(t, 5*time.Second, "the call did not start", func() bool { _, err := os.Stat(started); return err == nil })
	d.Close()
	if d.inFlight.Load() != 0 {
		t.Errorf("Close returned with %d calls in flight, want it to wait for the killed call", d.inFlight.Load())
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("Close took %s", time.Since(start))
	}
	if m := <-answer; m.Result == nil || !strings.Contains(m.Result.Text, "[killed") {
		t.Errorf("the call's answer = %+v (%+v), want it killed", m, m.Result)
	}
}

// runDaemon runs d on a Unix socket in a directory of its own until the test ends, and
// returns the socket's path.
func runDaemon(t *testing.T, d *Daemon) string {
	t.Helper()
	sock := filepath.Join(sshdtest.NewDaemonDir(t), "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	serveListener(t, d, l)
	return sock
}

// serveListener runs d on l until the test ends.
func serveListener(t *testing.T, d *Daemon, l net.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx, l, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run = %v", err)
		}
		d.Close()
	})
}

// dialDaemon connects to the daemon at sock as a proxy does and returns the first frame
// it answers with; a connection closed unanswered gives io.EOF.
func dialDaemon(t *testing.T, c net.Conn) (proto.Msg, error) {
	t.Helper()
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := proto.NewWriter(c).Write(proto.Msg{Proxy: &proto.Proxy{MaxImageBase64Bytes: 100}}); err != nil {
		return proto.Msg{}, err
	}
	return proto.NewReader(c).Read(t.Context())
}

// TestDaemonMaxConns: the daemon serves MaxConns connections at once and refuses the next
// with a fatal error frame that says so; once one ends, it serves a new one.
func TestDaemonMaxConns(t *testing.T) {
	d := NewDaemon(Options{Tools: []tools.Tool{tools.NewBash(tools.BashOptions{})}, MaxConns: 2, Log: testLog(t)})
	sock := runDaemon(t, d)
	dial := func() (net.Conn, proto.Msg) {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		m, err := dialDaemon(t, c)
		if err != nil {
			t.Fatalf("the daemon's first frame: %v", err)
		}
		return c, m
	}
	var open []net.Conn
	for i := range 2 {
		c, m := dial()
		if m.Hello == nil {
			t.Fatalf("connection %d: first frame %+v, want the hello", i+1, m)
		}
		open = append(open, c)
	}
	_, m := dial()
	if m.Err == nil || !m.Err.Fatal || !strings.Contains(m.Err.Message, "already serves 2 connections, its limit") {
		t.Fatalf("connection 3: first frame %+v, want a fatal error about the limit", m)
	}
	open[0].Close()
	sshdtest.WaitFor(t, 5*time.Second, "a slot was not freed", func() bool {
		_, m := dial()
		return m.Hello != nil
	})
}

// TestDaemonExitsWithStuckCall: a daemon whose call ignores its ctx still goes away, both
// ways its Run ends (SIGTERM cancels ctx; idle exit once the dropped owner's grace period
// is over), followed by Close, as `myco --mode host-daemon` does.
func TestDaemonExitsWithStuckCall(t *testing.T) {
	for _, how := range []string{"cancel", "idle"} {
		t.Run(how, func(t *testing.T) {
			stuck := &stuckTool{entered: make(chan struct{}, 1), release: make(chan struct{})}
			defer close(stuck.release)
			d := NewDaemon(Options{Tools: []tools.Tool{stuck}, Grace: 50 * time.Millisecond, IdleExit: 50 * time.Millisecond,
				CloseTimeout: 100 * time.Millisecond, Log: testLog(t)})
			l, err := net.Listen("unix", filepath.Join(sshdtest.NewDaemonDir(t), "d.sock"))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			exited := make(chan struct{})
			go func() {
				d.Run(ctx, l, nil)
				d.Close()
				close(exited)
			}()
			c, err := net.Dial("unix", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			if m, err := dialDaemon(t, c); err != nil || m.Hello == nil {
				t.Fatalf("first frame = %+v, %v", m, err)
			}
			w := proto.NewWriter(c)
			w.Write(proto.Msg{Hello: &proto.Hello{Protocol: proto.Version}})
			w.Write(proto.Msg{ID: 1, Call: &proto.Call{Owner: "o1", Tool: "stuck"}})
			<-stuck.entered
			if how == "cancel" {
				cancel()
			} else {
				c.Close() // a drop: the owner's grace period runs, then the daemon is idle
			}
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				t.Fatalf("the daemon did not exit (%s) with a stuck call in flight", how)
			}
		})
	}
}

// TestWriteResultTooLarge: a result over the line limit is answered with an error frame
// for its id, which the controller can read, instead of a line it could not.
func TestWriteResultTooLarge(t *testing.T) {
	var buf strings.Builder
	w := proto.NewWriterSize(&buf, 200)
	writeResult(w, 7, tools.Result{Text: "small"})
	writeResult(w, 8, tools.Result{Text: strings.Repeat("x", 300)})
	r := proto.NewReaderSize(strings.NewReader(buf.String()), 200)
	if m, err := r.Read(t.Context()); err != nil || m.ID != 7 || m.Result == nil {
		t.Errorf("first frame = %+v, %v, want result 7", m, err)
	}
	if m, err := r.Read(t.Context()); err != nil || m.ID != 8 || m.Err == nil || !strings.Contains(m.Err.Message, "too large for the host protocol") {
		t.Errorf("second frame = %+v, %v, want an error for 8", m, err)
	}
}

// TestDaemonRelativePaths: on a host daemon, view_image (one per connection's image cap)
// resolves a relative path against the current directory of the owner's bash session in
// the daemon's shared bash, and the editor names that path when it refuses a relative
// one: the wiring of myco --mode host-daemon.
func TestDaemonRelativePaths(t *testing.T) {
	needs.Proc(t)
	bash := tools.NewBash(tools.BashOptions{})
	d := NewDaemon(Options{
		Tools: []tools.Tool{bash, tools.NewEditor(tools.EditorOptions{Dirs: bash})},
		ConnTools: func(n int) []tools.Tool {
			return []tools.Tool{tools.NewImage(tools.ImageOptions{MaxBase64Bytes: n, Dirs: bash})}
		},
		Log: testLog(t),
	})
	t.Cleanup(d.Close)
	c := connect(t, d)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "shot.png"), tinyPNG, 0o644); err != nil {
		t.Fatal(err)
	}
	do := func(id uint64, tool string, in map[string]any) tools.Result {
		b, _ := json.Marshal(in)
		c.send(t, proto.Msg{ID: id, Call: &proto.Call{Owner: "o1", Tool: tool, Input: b}})
		m := c.read(t)
		if m.Result == nil {
			t.Fatalf("%s %v = %+v, want a result", tool, in, m)
		}
		return *m.Result
	}
	out := do(1, "bash", map[string]any{"action": "start", "command": "cd " + dir + " && echo in-dir && exec cat"}).Text
	for id := uint64(10); !strings.Contains(out, "in-dir"); id++ { // the session is in dir once it says so
		res := do(id, "bash", map[string]any{"action": "read", "session_id": "b1", "timeout_secs": 10})
		if strings.Contains(res.Text, "[no new output]") {
			t.Fatalf("the session did not start: %q", out+res.Text)
		}
		out += res.Text
	}
	want := filepath.Join(dir, "shot.png") + ` ("shot.png" resolved against the current directory of bash session b1, ` + dir + ")"
	if res := do(2, "view_image", map[string]any{"path": "shot.png"}); res.IsError || len(res.Images) != 1 || !strings.HasPrefix(res.Text, want+": image/png") {
		t.Errorf("view_image shot.png = %+v, want the image and %q", res, want)
	}
	if res := do(3, "str_replace_based_edit_tool", map[string]any{"command": "view", "path": "shot.png"}); !res.IsError || !strings.Contains(res.Text, "Use "+want) {
		t.Errorf("editor view shot.png = %+v, want a refusal naming %q", res, want)
	}
}
