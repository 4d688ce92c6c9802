package hosts

import (
	"errors"
	"fmt"
	"net"
	"os"
)

// errNoPeerCred is returned by checkPeer where the system does not tell a Unix socket's
// peer; the daemon then relies on its directory's permissions alone.
var errNoPeerCred = errors.New("peer credentials are not available on this system")

// checkPeer returns an error unless c's peer runs as this process's effective user: a
// defence in depth behind the daemon's private directory.
func checkPeer(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("a connection over %s, not a Unix socket", c.LocalAddr().Network())
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return fmt.Errorf("read the peer's credentials: %w", err)
	}
	var uid, pid int
	var credErr error
	if err := raw.Control(func(fd uintptr) { uid, pid, credErr = peerCred(int(fd)) }); err != nil {
		return fmt.Errorf("read the peer's credentials: %w", err)
	}
	switch {
	case errors.Is(credErr, errNoPeerCred):
		return credErr
	case credErr != nil:
		return fmt.Errorf("read the peer's credentials: %w", credErr)
	case uid != os.Geteuid():
		return fmt.Errorf("the peer (pid %d) runs as uid %d, and this daemon serves only its own uid %d", pid, uid, os.Geteuid())
	}
	return nil
}
