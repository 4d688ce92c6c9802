//go:build !linux

package handlers

import "net"

// unixPeerUID is not available here: such connections are refused by the owner check, and
// the server uses its token instead.
func unixPeerUID(*net.UnixConn) (int, error) { return 0, ErrNoPeerCred }
