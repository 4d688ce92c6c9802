package profiles

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"

	"myco.dev/internal/handoff"
)

type noHandoffs struct{}

func (noHandoffs) Sender(context.Context, string) (*handoff.Sender, error) {
	return nil, errors.New("no workers here")
}

// TestSplitListenerClosed: once closed, the supervisor's listener fails every Accept with
// net.ErrClosed, whether Close or its accepting goroutine ended it first; a nil connection
// with a nil error made http.Server serve nil, a panic at shutdown that a test caught.
func TestSplitListenerClosed(t *testing.T) {
	sv := NewSupervisor(SupervisorOptions{Port: "1", UID: os.Getuid(), Exists: func(string) bool { return false }})
	for range 200 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l := sv.Listener(ln, noHandoffs{})
		l.Close()
		c, err := l.Accept()
		if c != nil || !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close = %v, %v; want no connection and net.ErrClosed", c, err)
		}
	}
}

// flakyListener fails its first Accept with EMFILE (out of file descriptors), then gives
// one end of a pipe.
type flakyListener struct {
	net.Listener
	calls int
}

func (f *flakyListener) Accept() (net.Conn, error) {
	if f.calls++; f.calls == 1 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	c, _ := net.Pipe()
	return c, nil
}

func (f *flakyListener) Close() error { return nil }

// TestSplitListenerRetriesTemporaryErrors: running out of file descriptors once does not
// end the port's service: the next connection is accepted.
func TestSplitListenerRetriesTemporaryErrors(t *testing.T) {
	sv := NewSupervisor(SupervisorOptions{Port: "1", UID: os.Getuid(), Exists: func(string) bool { return false }})
	l := sv.Listener(&flakyListener{}, noHandoffs{})
	defer l.Close()
	c, err := l.Accept()
	if err != nil || c == nil {
		t.Fatalf("Accept = %v, %v; want the connection after the temporary error", c, err)
	}
	c.Close()
}
