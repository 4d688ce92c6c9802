package handoff

import (
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
		if err := snd.Send(server.(*net.TCPConn), head); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
		server.Close() // the receiver has its own copy
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
		ans, _ := io.ReadAll(client)
		if string(ans) != "ok" {
			t.Errorf("the client got %q from the receiver", ans)
		}
		client.Close()
	}
	if err := snd.Send(&net.TCPConn{}, make([]byte, MaxPrefix+1)); err == nil {
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
