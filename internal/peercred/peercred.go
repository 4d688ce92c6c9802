// Package peercred tells who is at the other end of a local connection: the user (and
// process) of a Unix socket's peer, from the kernel (SO_PEERCRED, LOCAL_PEERCRED), and the
// user that owns the client socket of a loopback TCP connection, from the kernel's socket
// tables (sock_diag, or /proc/net/tcp where that is refused). Both of myco's servers use
// it: the browser server to serve only its own user, the host daemon to refuse another
// user's connection. The same tables tell how much a client has not read yet, which the
// browser server's event streams watch (see web.SSE.Pace), and who holds a port that the
// server found taken ([Listener]).
//
// It imports only the standard library and golang.org/x/sys.
package peercred

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// ErrUnavailable reports that this system does not tell the owner of a local connection.
var ErrUnavailable = errors.New("peercred: the owner of a local connection cannot be told on this system")

// Cred is who is at the other end of a Unix socket, as it was when the socket connected.
type Cred struct {
	UID int
	PID int // 0 where the system does not tell it
}

// Unix returns the credentials of the process at the other end of c.
func Unix(c *net.UnixConn) (Cred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Cred{}, fmt.Errorf("read the peer's credentials: %w", err)
	}
	var cred Cred
	var credErr error
	if err := raw.Control(func(fd uintptr) { cred, credErr = fdCred(int(fd)) }); err != nil {
		return Cred{}, fmt.Errorf("read the peer's credentials: %w", err)
	}
	if credErr != nil && !errors.Is(credErr, ErrUnavailable) {
		credErr = fmt.Errorf("read the peer's credentials: %w", credErr)
	}
	return cred, credErr
}

// CheckUnix returns an error unless c's peer runs as uid and, when pid is not 0 and the
// system tells it, is process pid.
func CheckUnix(c net.Conn, uid, pid int) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("a connection over %s, not a Unix socket", c.LocalAddr().Network())
	}
	cred, err := Unix(uc)
	switch {
	case err != nil:
		return err
	case cred.UID != uid:
		return fmt.Errorf("the peer (pid %d) runs as uid %d, not %d", cred.PID, cred.UID, uid)
	case pid != 0 && cred.PID != 0 && cred.PID != pid:
		return fmt.Errorf("the peer is process %d, not %d", cred.PID, pid)
	}
	return nil
}

// TCPAvailable reports whether [TCP] can work here.
func TCPAvailable() bool {
	_, err := os.Stat("/proc/net/tcp")
	return err == nil
}

// Sock is what the kernel's socket tables tell of one TCP socket of this machine.
type Sock struct {
	UID    int // its owner
	Unread int // the bytes it has received and its program not read yet
}

// TCP returns the uid that owns the socket at client, connected to server, from the
// kernel's socket tables: for a loopback connection both ends are sockets of this machine.
func TCP(client, server net.Addr) (int, error) {
	sock, err := TCPSock(client, server)
	return sock.UID, err
}

// TCPSock looks up the socket at client, connected to server, in the kernel's socket
// tables. It asks the kernel for that one socket (sock_diag), and reads /proc/net/tcp
// where that is not allowed.
func TCPSock(client, server net.Addr) (Sock, error) {
	c, ok1 := client.(*net.TCPAddr)
	s, ok2 := server.(*net.TCPAddr)
	if !ok1 || !ok2 {
		return Sock{}, fmt.Errorf("peer of %s: not a TCP connection", client)
	}
	if sock, err := diagSock(c, s); err == nil {
		return sock, nil
	}
	return tableSock(c, s)
}

// tableSock finds the socket at c, connected to s, in /proc/net/tcp (or tcp6).
func tableSock(c, s *net.TCPAddr) (Sock, error) {
	var table, local, remote string
	if c.IP.To4() != nil && s.IP.To4() != nil {
		table, local, remote = "/proc/net/tcp", hexAddr4(c), hexAddr4(s)
	} else {
		table, local, remote = "/proc/net/tcp6", hexAddr6(c), hexAddr6(s)
	}
	f, err := os.Open(table)
	if err != nil {
		return Sock{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
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
			return Sock{}, fmt.Errorf("%s: bad uid %q", table, fields[7])
		}
		// tx_queue:rx_queue, in hex
		_, rx, _ := strings.Cut(fields[4], ":")
		unread, err := strconv.ParseUint(rx, 16, 32)
		if err != nil {
			return Sock{}, fmt.Errorf("%s: bad queues %q", table, fields[4])
		}
		return Sock{UID: uid, Unread: int(unread)}, nil
	}
	if err := sc.Err(); err != nil {
		return Sock{}, err // "read TABLE: why"
	}
	return Sock{}, fmt.Errorf("peer %s of %s: no socket in %s", c, s, table)
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
