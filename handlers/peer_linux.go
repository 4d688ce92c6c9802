package handlers

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// unixPeerUID returns the uid of the process at the other end of a Unix socket.
func unixPeerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) { cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, fmt.Errorf("read the peer's credentials: %w", credErr)
	}
	return int(cred.Uid), nil
}
