//go:build !linux

package peercred

import (
	"errors"
	"net"
)

func diagSock(local, remote *net.TCPAddr) (Sock, error) {
	return Sock{}, errors.New("sock_diag is Linux only")
}
