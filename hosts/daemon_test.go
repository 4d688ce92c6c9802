package hosts

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"myco/hosts/proto"
	"myco/hosts/tools"
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
	d := NewDaemon(DaemonOptions{Tools: []tools.Tool{tools.NewBash(tools.BashOptions{})}, Log: testLog(t)})
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
	d := NewDaemon(DaemonOptions{Tools: []tools.Tool{tools.NewBash(tools.BashOptions{})}, Grace: time.Minute, IdleExit: time.Second, Log: testLog(t)})
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
