package handlers

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// ErrNoPeerCred reports that the owner of a connection's client socket cannot be told
// here (no /proc/net/tcp): the server then falls back to its token.
var ErrNoPeerCred = errors.New("handlers: the owner of a loopback connection cannot be told on this system")

type peerKey struct{}

// peer is what ConnContext learnt about a connection's client.
type peer struct {
	uid int
	err error
}

// ConnContext looks up the owner of the client end of each accepted loopback connection
// (by its addresses in /proc/net/tcp and tcp6) and keeps it in the connection's context,
// for the owner check of every request on it. Set it as http.Server.ConnContext.
// A connection over a Unix socket (a profile worker's, from the supervisor) is told by the
// socket's peer credentials.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	var uid int
	var err error
	if uc, ok := c.(*net.UnixConn); ok {
		uid, err = unixPeerUID(uc)
	} else {
		uid, err = PeerUID(c.RemoteAddr(), c.LocalAddr())
	}
	return context.WithValue(ctx, peerKey{}, peer{uid: uid, err: err})
}

// ownerCheck serves only requests whose connection belongs to uid: another user of the
// machine cannot drive the server, while the owner, an SSH port-forward (which sshd opens
// as the user) and the agent's own tools need no login.
func ownerCheck(uid int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := r.Context().Value(peerKey{}).(peer)
		switch {
		case !ok || p.err != nil:
			forbid(w, "the owner of this connection could not be told, so it is refused")
		case p.uid != uid:
			forbid(w, fmt.Sprintf("this myco server belongs to uid %d; the connection comes from uid %d", uid, p.uid))
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// PeerCredAvailable reports whether [PeerUID] can work here.
func PeerCredAvailable() bool {
	_, err := os.Stat("/proc/net/tcp")
	return err == nil
}

// PeerUID returns the uid that owns the socket at client, connected to server, from the
// kernel's socket tables: for a loopback connection both ends are sockets of this machine.
// It asks the kernel for that one socket (sock_diag), and reads /proc/net/tcp where that
// is not allowed.
func PeerUID(client, server net.Addr) (int, error) {
	c, ok1 := client.(*net.TCPAddr)
	s, ok2 := server.(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("peer of %s: not a TCP connection", client)
	}
	if uid, err := diagUID(c, s); err == nil {
		return uid, nil
	}
	table, local, remote := "/proc/net/tcp", hexAddr4(c), hexAddr4(s)
	if c.IP.To4() == nil {
		table, local, remote = "/proc/net/tcp6", hexAddr6(c), hexAddr6(s)
	}
	f, err := os.Open(table)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNoPeerCred, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || !strings.EqualFold(fields[1], local) || !strings.EqualFold(fields[2], remote) {
			continue
		}
		uid, err := strconv.Atoi(fields[7])
		if err != nil {
			return 0, fmt.Errorf("%s: bad uid %q", table, fields[7])
		}
		return uid, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err // "read TABLE: why"
	}
	return 0, fmt.Errorf("peer %s of %s: no socket in %s", client, server, table)
}

// hexAddr4 writes an IPv4 address and port as /proc/net/tcp does: the address as one
// little-endian 32-bit word, then the port, in hex.
func hexAddr4(a *net.TCPAddr) string {
	ip := a.IP.To4()
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
}

// hexAddr6 writes an IPv6 address as /proc/net/tcp6 does: four 32-bit words, each
// little-endian.
func hexAddr6(a *net.TCPAddr) string {
	ip := a.IP.To16()
	b := make([]byte, 16)
	for w := 0; w < 4; w++ {
		for i := 0; i < 4; i++ {
			b[w*4+i] = ip[w*4+3-i]
		}
	}
	return strings.ToUpper(hex.EncodeToString(b)) + fmt.Sprintf(":%04X", a.Port)
}
