package peercred

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"myco.dev/internal/needs"
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
			if uid, err := diagUID(client, server); err != nil || uid != os.Getuid() {
				t.Errorf("diagUID = %d, %v; want %d", uid, err, os.Getuid())
			}
			if uid, err := tableUID(client, server); err != nil || uid != os.Getuid() {
				t.Errorf("tableUID = %d, %v; want %d", uid, err, os.Getuid())
			}
			gone := &net.TCPAddr{IP: client.IP, Port: 1}
			if _, err := diagUID(gone, server); err == nil {
				t.Error("diagUID of a socket that does not exist succeeded")
			}
			if _, err := tableUID(gone, server); err == nil {
				t.Error("tableUID of a socket that does not exist succeeded")
			}
			if _, err := TCP(c.LocalAddr(), &net.UnixAddr{Name: "x", Net: "unix"}); err == nil {
				t.Error("TCP of a Unix address succeeded")
			}
		})
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
