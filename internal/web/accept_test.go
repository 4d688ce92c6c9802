package web

import (
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"myco.dev/internal/otheruser"
)

// dialAs opens n connections to addr as user uid.
func dialAs(t *testing.T, uid int, addr string, n int) []net.Conn {
	t.Helper()
	var conns []net.Conn
	var err error
	otheruser.Do(t, uid, func() {
		for range n {
			var c net.Conn
			if c, err = net.DialTimeout("tcp", addr, 5*time.Second); err != nil {
				return
			}
			conns = append(conns, c)
		}
	})
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	if err != nil {
		t.Fatalf("dial %s as uid %d: %v", addr, uid, err)
	}
	return conns
}

// accepting passes on what l accepts until it is closed.
func accepting(l net.Listener) <-chan net.Conn {
	out := make(chan net.Conn, 16)
	go func() {
		defer close(out)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			out <- c
		}
	}()
	return out
}

// next returns the next connection of accepted, failing after a few seconds.
func next(t *testing.T, accepted <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case c := <-accepted:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("Accept did not return the owner's connection within 10 s")
		return nil
	}
}

// TestOwnerOnly: another user's connection is answered 403 not_owner in the error
// envelope and closed, whether it sends a request or nothing; the owner's connection
// behind a flood of theirs is passed on; Close cuts the refusals in flight short.
func TestOwnerOnly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := OwnerOnly(ln, os.Getuid())
	defer l.Close()
	addr := ln.Addr().String()
	accepted := accepting(l)

	theirs := dialAs(t, otheruser.UID, addr, 2)
	io.WriteString(theirs[0], "GET /api/sessions HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	ours, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	c := next(t, accepted)
	if c.RemoteAddr().String() != ours.LocalAddr().String() {
		t.Errorf("Accept passed on %s, want the owner's %s", c.RemoteAddr(), ours.LocalAddr())
	}
	c.Close()
	for i, name := range []string{"a request", "nothing"} {
		theirs[i].SetDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(theirs[i]) // returns once the listener closes it
		if err != nil {
			t.Fatalf("%s: read: %v, got %q; want the connection closed", name, err, got)
		}
		if !strings.HasPrefix(string(got), "HTTP/1.1 403 ") || !strings.Contains(string(got), "Connection: close") ||
			!strings.Contains(string(got), `"code": "not_owner"`) || !strings.Contains(string(got), "uid "+strconv.Itoa(otheruser.UID)) {
			t.Errorf("%s: answer = %q, want 403 not_owner naming uid %d, Connection: close", name, got, otheruser.UID)
		}
	}

	// A flood: the silent ones take every slot, the rest are closed unanswered, and the
	// owner's connection behind them is passed on.
	flood := dialAs(t, otheruser.UID, addr, 100)
	ours2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ours2.Close()
	start := time.Now()
	next(t, accepted).Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the owner's connection behind 100 of another user's was accepted after %v", d)
	}
	answered, unanswered := 0, 0
	for _, c := range flood[len(flood)-20:] {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c)
		switch {
		case err != nil:
			t.Fatalf("a connection of the flood was not closed: %v", err)
		case len(got) == 0:
			unanswered++
		default:
			answered++
		}
	}
	if unanswered == 0 {
		t.Errorf("every connection of the flood was answered (%d): want all but %d closed unanswered", answered, maxRefusing)
	}

	// Close ends the refusals that wait for a request at once.
	refusing := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			l.mu.Lock()
			n := len(l.refusing)
			l.mu.Unlock()
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d refusals in flight, want %d", n, want)
			}
		}
	}
	refusing(0) // the flood's, each bounded by refuseRead
	dialAs(t, otheruser.UID, addr, maxRefusing)
	refusing(maxRefusing)
	start = time.Now()
	l.Close()
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("Close took %v with %d refusals in flight, want them cut short", d, maxRefusing)
	}
}
