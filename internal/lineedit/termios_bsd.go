//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package lineedit

import "golang.org/x/sys/unix"

const (
	ioctlReadTermios  = unix.TIOCGETA
	ioctlWriteTermios = unix.TIOCSETA
)
