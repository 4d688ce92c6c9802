//go:build aix || linux || solaris || zos || darwin || dragonfly || freebsd || netbsd || openbsd

package lineedit

import "golang.org/x/sys/unix"

type termios = unix.Termios

// getTermios returns the mode of terminal fd.
func getTermios(fd int) (*termios, error) { return unix.IoctlGetTermios(fd, ioctlReadTermios) }

// setQuiet puts terminal fd in mode orig without echo and without the terminal's own line
// editing: what is typed then waits, unseen, for the next read, which shows it on the
// line; Ctrl-C and Ctrl-Z still send their signals, and output is processed as in orig.
func setQuiet(fd int, orig *termios) error {
	t := *orig
	t.Lflag &^= unix.ECHO | unix.ICANON
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	return unix.IoctlSetTermios(fd, ioctlWriteTermios, &t)
}
