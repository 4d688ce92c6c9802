//go:build !linux

package peercred

import (
	"errors"
	"net"
)

func diagUID(local, remote *net.TCPAddr) (int, error) {
	return 0, errors.New("sock_diag is Linux only")
}
