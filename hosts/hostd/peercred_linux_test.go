package hostd

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"myco.dev/hosts/tools"
	"myco.dev/internal/needs"
	"myco.dev/internal/syncbuf"
)

// dialAsUID connects to the Unix socket addr from a thread whose effective uid is uid, so
// that the connection's peer credentials name uid. The thread is never given back: it
// ends with its goroutine.
func dialAsUID(addr string, uid int) (net.Conn, error) {
	type dialed struct {
		c   net.Conn
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		runtime.LockOSThread()
		// Raw, so that only this thread changes (syscall.Setresuid changes them all).
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
			ch <- dialed{nil, e}
			return
		}
		c, err := net.Dial("unix", addr)
		ch <- dialed{c, err}
	}()
	d := <-ch
	return d.c, d.err
}

// TestDaemonRefusesOtherUID: a connection whose peer runs as another user is closed
// unanswered, and the daemon logs who it was; one of its own user is served. The socket is
// in the abstract namespace, which has no file permissions, so only the peer check stands
// in the way. Changing uid needs root; CI runs as root.
func TestDaemonRefusesOtherUID(t *testing.T) {
	needs.Root(t, "connecting as another uid")
	var log syncbuf.Buffer
	d := NewDaemon(Options{Tools: []tools.Tool{tools.NewBash(tools.BashOptions{})}, Log: slog.New(slog.NewTextHandler(&log, nil))})
	var id [8]byte
	rand.Read(id[:])
	addr := "@myco-test-" + hex.EncodeToString(id[:])
	l, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	serveListener(t, d, l)

	c, err := dialAsUID(addr, 65534)
	if err != nil {
		t.Fatalf("dial as uid 65534: %v", err)
	}
	if m, err := dialDaemon(t, c); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		t.Errorf("the daemon answered a peer of uid 65534 with %+v, %v; want the connection closed unanswered", m, err)
	}
	if got := log.String(); !strings.Contains(got, "runs as uid 65534") {
		t.Errorf("daemon log = %q, want the refused uid", got)
	}
	c, err = net.Dial("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := dialDaemon(t, c); err != nil || m.Hello == nil {
		t.Errorf("the daemon answered its own uid with %+v, %v; want its hello", m, err)
	}
}
