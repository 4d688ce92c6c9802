package handoff

import (
	"io"
	"net"
	"path/filepath"
	"testing"
)

// TestHandoff hands accepted TCP connections, with bytes already read from them, to a
// listener over a Unix socket: the receiver reads the prefix, then the rest, and answers
// on the same connection.
func TestHandoff(t *testing.T) {
	l, err := Listen(filepath.Join(t.TempDir(), "h.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	snd := NewSender(l.Addr().String())
	defer snd.Close()
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
