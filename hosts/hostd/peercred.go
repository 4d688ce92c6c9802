package hostd

import (
	"net"
	"os"

	"myco.dev/internal/peercred"
)

// checkPeer returns an error unless c's peer runs as this process's effective user: a
// defence in depth behind the daemon's private directory. It returns an error that is
// [peercred.ErrUnavailable] where the system does not tell a Unix socket's peer; the
// daemon then relies on its directory's permissions alone.
func checkPeer(c net.Conn) error {
	return peercred.CheckUnix(c, os.Geteuid(), 0)
}
