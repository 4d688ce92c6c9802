package handoff

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// pair returns a sender and a listener joined by a new channel.
func pair(t *testing.T) (*Sender, *Listener) {
	t.Helper()
	ours, theirs, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := fileConn(theirs, "test") // as Inherit does in the receiving process
	if err != nil {
		t.Fatal(err)
	}
	snd, l := NewSender(ours), Listen(ch)
	t.Cleanup(func() { snd.Close(); l.Close() })
	return snd, l
}

// TestHandoff hands accepted TCP connections, with bytes already read from them, over a
// channel: the receiver reads the prefix, then the rest, and answers on the same
// connection.
func TestHandoff(t *testing.T) {
	snd, l := pair(t)
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	for i := range 3 {
		client, err := net.Dial("tcp", tl.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server, err := tl.Accept()
		if err != nil {
			t.Fatal(err)
		}
		client.Write([]byte("hello, rest"))
		head := make([]byte, 7)
		if _, err := io.ReadFull(server, head); err != nil {
			t.Fatal(err)
		}
		h, err := snd.Send(server.(*net.TCPConn), head, "GET /")
		if err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
		got, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 11)
		if _, err := io.ReadFull(got, buf); err != nil || string(buf) != "hello, rest" {
			t.Fatalf("received %q, %v", buf, err)
		}
		if got.RemoteAddr().String() != client.LocalAddr().String() {
			t.Errorf("remote address %s, want the client's %s", got.RemoteAddr(), client.LocalAddr())
		}
		got.Write([]byte("ok"))
		got.Close()
		select {
		case <-h.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the receiver closed the connection, and the sender did not hear it")
		}
		if label, lost := h.Lost(); lost {
			t.Errorf("Lost() = %q, true after the receiver closed the connection; want not lost", label)
		}
		server.Close() // the sender's copy, kept until the receiver was done
		ans, _ := io.ReadAll(client)
		if string(ans) != "ok" {
			t.Errorf("the client got %q from the receiver", ans)
		}
		client.Close()
	}
	if _, err := snd.Send(&net.TCPConn{}, make([]byte, MaxPrefix+1), ""); err == nil {
		t.Error("a prefix over MaxPrefix was sent")
	}
}

// TestDial: a dialled connection reaches the listener as a Unix socket, both ways.
func TestDial(t *testing.T) {
	snd, l := pair(t)
	c, err := snd.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if _, ok := got.(*net.UnixConn); !ok {
		t.Errorf("accepted %T, want *net.UnixConn", got)
	}
	c.Write([]byte("ping"))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(got, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("received %q, %v", buf, err)
	}
	got.Write([]byte("pong"))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("answered %q, %v", buf, err)
	}
}

// TestChannelEnds: the listener ends when the sender closes the channel, and a closed
// sender refuses to send.
func TestChannelEnds(t *testing.T) {
	snd, l := pair(t)
	snd.Close()
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not end with its channel")
	}
	if _, err := l.Accept(); err == nil {
		t.Error("Accept after the channel ended succeeded")
	}
	if _, err := snd.Dial(); err == nil {
		t.Error("Dial on a closed sender succeeded")
	}
}

// handed hands a new loopback connection, whose client has sent "GET /a", over snd with
// that label, and returns the client's end, the receiver's and the lifeline.
func handed(t *testing.T, snd *Sender, l *Listener) (client net.Conn, got *Conn, h *Handed) {
	t.Helper()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	client, err = net.Dial("tcp", tl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err := tl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	if h, err = snd.Send(server.(*net.TCPConn), []byte("GET /a"), "GET /a"); err != nil {
		t.Fatal(err)
	}
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	got, ok := c.(*Conn)
	if !ok {
		t.Fatalf("accepted %T, want *Conn", c)
	}
	return client, got, h
}

// TestLifeline: when the receiver is lost (its end of the channel closes with its process)
// before it is done with a connection, the sender hears which exchange waited for an
// answer not begun: the first one, or one begun later; none once an answer began. A
// receiver that closes the connection is done with it, not lost.
func TestLifeline(t *testing.T) {
	for _, tt := range []struct {
		name      string
		receiver  func(c *Conn)
		lost      bool
		wantLabel string
	}{
		{"the first exchange waits", func(c *Conn) {}, true, "GET /a"},
		{"a later exchange waits", func(c *Conn) { c.Write([]byte("answer")); c.Begin("POST /b") }, true, "POST /b"},
		{"an answer has begun", func(c *Conn) { c.Write([]byte("half an ans")) }, true, ""},
		{"answered, idle", func(c *Conn) { c.Begin("GET /c"); c.Write([]byte("answer")) }, true, ""},
		{"done", func(c *Conn) { c.Write([]byte("answer")); c.Close() }, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snd, l := pair(t)
			_, got, h := handed(t, snd, l)
			tt.receiver(got)
			if tt.lost {
				l.ch.Close() // as the kernel does when the receiving process dies
			}
			select {
			case <-h.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the lifeline did not end")
			}
			if label, lost := h.Lost(); lost != tt.lost || label != tt.wantLabel {
				t.Errorf("Lost() = %q, %v; want %q, %v", label, lost, tt.wantLabel, tt.lost)
			}
			if !tt.lost {
				return
			}
			if _, err := snd.Send(&net.TCPConn{}, nil, ""); !errors.Is(err, ErrClosed) {
				t.Errorf("Send after the receiver was lost = %v, want ErrClosed", err)
			}
		})
	}
}

// TestListenerCloseKeepsReports: a listener closed while a connection it was handed is
// still served (a server shutting down gracefully) keeps the channel open for that
// connection's reports: the sender hears it done, not lost.
func TestListenerCloseKeepsReports(t *testing.T) {
	snd, l := pair(t)
	_, got, h := handed(t, snd, l)
	l.Close()
	got.Write([]byte("answer"))
	got.Close()
	<-h.Done()
	if label, lost := h.Lost(); lost {
		t.Errorf("Lost() = %q, true for a connection served to its end after Close; want not lost", label)
	}
}
