package handlers

import (
	"net"
	"os"
	"testing"
)

// TestPeerUID tells the owner of both ends of a loopback connection, v4 and v6, by the
// kernel's answer and by /proc/net/tcp alike.
func TestPeerUID(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("no %s here: %v", addr, err)
			continue
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if uid, err := PeerUID(c.LocalAddr(), c.RemoteAddr()); err != nil || uid != os.Getuid() {
			t.Errorf("%s: PeerUID = %d, %v; want %d", addr, uid, err, os.Getuid())
		}
		if uid, err := diagUID(c.LocalAddr().(*net.TCPAddr), c.RemoteAddr().(*net.TCPAddr)); err != nil || uid != os.Getuid() {
			t.Errorf("%s: diagUID = %d, %v", addr, uid, err)
		}
		if _, err := diagUID(c.LocalAddr().(*net.TCPAddr), &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}); err == nil {
			t.Errorf("%s: diagUID of a socket that does not exist succeeded", addr)
		}
	}
}
