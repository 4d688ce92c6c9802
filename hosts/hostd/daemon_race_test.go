package hostd

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"myco.dev/hosts/proto"
	"myco.dev/hosts/tools"
	"myco.dev/internal/sshdtest"
)

// hookHandler passes every log record to on, in the goroutine that logs it: a test runs
// its step at the point the code under test logs.
type hookHandler struct{ on func(slog.Record) }

func (h hookHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h hookHandler) Handle(_ context.Context, r slog.Record) error {
	h.on(r)
	return nil
}
func (h hookHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h hookHandler) WithGroup(string) slog.Handler      { return h }

// TestDaemonReattachAtGraceEnd: a controller takes an owner up again right as its grace
// period ends, after housekeeping chose to release it and before it did. The owner's
// sessions live on; they were once killed.
func TestDaemonReattachAtGraceEnd(t *testing.T) {
	var again *pipeConn
	var hooked bool
	log := slog.New(hookHandler{on: func(r slog.Record) {
		if r.Message != "grace period over; releasing" || hooked {
			return
		}
		hooked = true
		again.send(t, proto.Msg{ID: 1, Call: &proto.Call{Owner: "o1", Tool: "bash", Input: json.RawMessage(`{"action":"start","command":"exec cat"}`)}})
		if m := again.read(t); m.Result == nil || !strings.HasPrefix(m.Result.Text, "session_id: b2") {
			t.Errorf("start at the end of the grace period = %+v", m)
		}
	}})
	d := NewDaemon(Options{Tools: []tools.Tool{tools.NewBash(tools.BashOptions{})}, Grace: time.Minute, Log: log})
	t.Cleanup(d.Close) // after the connections' cleanups
	c := connect(t, d)
	c.send(t, proto.Msg{ID: 1, Call: &proto.Call{Owner: "o1", Tool: "bash", Input: json.RawMessage(`{"action":"start","command":"exec cat"}`)}})
	c.read(t)
	c.in.Close()
	<-c.done
	again = connect(t, d)
	d.housekeep(time.Now().Add(61 * time.Second))
	if !hooked {
		t.Fatal("housekeeping did not choose the dropped owner for release")
	}
	for i, id := range []string{"b1", "b2"} {
		again.send(t, proto.Msg{ID: uint64(2 + i), Call: &proto.Call{Owner: "o1", Tool: "bash", Input: json.RawMessage(`{"action":"read","session_id":"` + id + `"}`)}})
		if m := again.read(t); m.Result == nil || m.Result.IsError {
			t.Errorf("read %s after the grace period = %+v, want the session alive", id, m.Result)
		}
	}
}

// gatedListener holds each accepted connection back until gate is closed.
type gatedListener struct {
	net.Listener
	gate chan struct{}
}

func (g gatedListener) Accept() (net.Conn, error) {
	c, err := g.Listener.Accept()
	if err == nil {
		<-g.gate
	}
	return c, err
}

// TestDaemonIdleExitAfterAccept: a connection accepted as the daemon decides to exit idle
// is counted only after the decision; it is closed before its hello, so that its proxy
// connects again (to a new daemon), rather than served and then ended with the daemon.
// The connection is let through when Run lets go of the proxies' start lock, after its
// decision and before it ends the connections.
func TestDaemonIdleExitAfterAccept(t *testing.T) {
	d := NewDaemon(Options{IdleExit: 50 * time.Millisecond, Log: testLog(t)})
	t.Cleanup(d.Close)
	sock := filepath.Join(sshdtest.NewDaemonDir(t), "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	gl := gatedListener{Listener: l, gate: make(chan struct{})}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var first proto.Msg
	var firstErr error
	lock := func() func() {
		return func() {
			select {
			case <-gl.gate:
				return // a later exit decision
			default:
			}
			close(gl.gate)
			first, firstErr = dialDaemon(t, c)
		}
	}
	if err := d.Run(t.Context(), gl, lock); err != nil {
		t.Fatalf("Run = %v", err)
	}
	// Closed unread, the connection may be reset rather than ended: the proxy connects
	// again either way.
	if firstErr == nil || first.Hello != nil {
		t.Errorf("a connection counted after the idle exit decision got %+v, %v; want it closed before the hello", first, firstErr)
	}
}
