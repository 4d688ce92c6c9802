package peercred

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"myco.dev/internal/needs"
	"myco.dev/internal/otheruser"
)

// loopback returns both ends of a TCP connection on addr, or skips when this machine has
// no such address (IPv6 is off on some).
func loopback(t *testing.T, addr string) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		needs.Missing(t, "no %s here: %v", addr, err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// TestTCP tells the owner of the client end of a loopback connection, v4 and v6, both by
// the kernel's answer (sock_diag) and by the /proc/net/tcp tables, and fails for a socket
// that does not exist.
func TestTCP(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			c, s := loopback(t, addr)
			client, server := s.RemoteAddr().(*net.TCPAddr), s.LocalAddr().(*net.TCPAddr)
			if uid, err := TCP(client, server); err != nil || uid != os.Getuid() {
				t.Errorf("TCP = %d, %v; want %d", uid, err, os.Getuid())
			}
			if sock, err := diagSock(client, server); err != nil || sock.UID != os.Getuid() {
				t.Errorf("diagSock = %+v, %v; want uid %d", sock, err, os.Getuid())
			}
			if sock, err := tableSock(client, server); err != nil || sock.UID != os.Getuid() {
				t.Errorf("tableSock = %+v, %v; want uid %d", sock, err, os.Getuid())
			}
			gone := &net.TCPAddr{IP: client.IP, Port: 1}
			if _, err := diagSock(gone, server); err == nil {
				t.Error("diagSock of a socket that does not exist succeeded")
			}
			if _, err := tableSock(gone, server); err == nil {
				t.Error("tableSock of a socket that does not exist succeeded")
			}
			if _, err := TCP(c.LocalAddr(), &net.UnixAddr{Name: "x", Net: "unix"}); err == nil {
				t.Error("TCP of a Unix address succeeded")
			}
		})
	}
}

// TestUnread tells how many bytes the client end of a loopback connection has received
// and not read, by both lookups: what the server wrote, then nothing once it is read.
func TestUnread(t *testing.T) {
	c, s := loopback(t, "127.0.0.1:0")
	client, server := s.RemoteAddr(), s.LocalAddr()
	const n = 5000
	if _, err := s.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	unread := func(want int) {
		t.Helper()
		var d, tb Sock
		var err1, err2 error
		for range 200 { // the bytes cross the loopback device soon after the write
			d, err1 = diagSock(client.(*net.TCPAddr), server.(*net.TCPAddr))
			tb, err2 = tableSock(client.(*net.TCPAddr), server.(*net.TCPAddr))
			if err1 == nil && err2 == nil && d.Unread == want && tb.Unread == want {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("unread: sock_diag says %d (%v), /proc/net/tcp %d (%v); want %d", d.Unread, err1, tb.Unread, err2, want)
	}
	unread(n)
	if _, err := io.ReadFull(c, make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	unread(0)
	if sock, err := TCPSock(client, server); err != nil || sock.Unread != 0 || sock.UID != os.Getuid() {
		t.Errorf("TCPSock = %+v, %v", sock, err)
	}
}

// TestUnix tells the uid and pid of a Unix socket's peer, and CheckUnix refuses another
// uid or process.
func TestUnix(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-accepted
	defer s.Close()
	cred, err := Unix(s.(*net.UnixConn))
	if err != nil || cred.UID != os.Getuid() || (cred.PID != 0 && cred.PID != os.Getpid()) {
		t.Fatalf("Unix = %+v, %v; want uid %d pid %d", cred, err, os.Getuid(), os.Getpid())
	}
	if err := CheckUnix(s, os.Getuid(), os.Getpid()); err != nil {
		t.Errorf("CheckUnix(own uid and pid) = %v", err)
	}
	if err := CheckUnix(s, os.Getuid()+1, 0); err == nil {
		t.Error("CheckUnix(another uid) = nil")
	}
	if cred.PID != 0 {
		if err := CheckUnix(s, os.Getuid(), os.Getpid()+1); err == nil {
			t.Error("CheckUnix(another pid) = nil")
		}
	}
}

// TestListener tells the owner of a listening socket, found by the address and port it
// listens on, by its port with a wildcard address (a socket on 0.0.0.0 or :: holds the
// port of 127.0.0.1 too), and fails for a port nothing listens on.
func TestListener(t *testing.T) {
	for _, tt := range []struct{ listen, ask string }{
		{"127.0.0.1:0", "127.0.0.1"},
		{"[::1]:0", "::1"},
		{"0.0.0.0:0", "127.0.0.1"},
		{"[::]:0", "127.0.0.1"},
	} {
		t.Run(tt.listen, func(t *testing.T) {
			ln, err := net.Listen("tcp", tt.listen)
			if err != nil {
				needs.Missing(t, "no %s here: %v", tt.listen, err)
			}
			defer ln.Close()
			addr := &net.TCPAddr{IP: net.ParseIP(tt.ask), Port: ln.Addr().(*net.TCPAddr).Port}
			if uid, err := Listener(addr); err != nil || uid != os.Getuid() {
				t.Errorf("Listener(%s) = %d, %v; want %d", addr, uid, err, os.Getuid())
			}
		})
	}
	var theirs net.Listener
	var err error
	otheruser.Do(t, otheruser.UID, func() { theirs, err = net.Listen("tcp", "127.0.0.1:0") })
	if err != nil {
		t.Fatal(err)
	}
	if uid, err := Listener(theirs.Addr().(*net.TCPAddr)); err != nil || uid != otheruser.UID {
		t.Errorf("Listener(%s), another user's = %d, %v; want %d", theirs.Addr(), uid, err, otheruser.UID)
	}
	free := theirs.Addr().(*net.TCPAddr)
	theirs.Close()
	if uid, err := Listener(free); err == nil {
		t.Errorf("Listener(%s), where nothing listens = %d, want an error", free, uid)
	}
}
