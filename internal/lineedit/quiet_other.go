//go:build !(aix || linux || solaris || zos || darwin || dragonfly || freebsd || netbsd || openbsd)

package lineedit

import "errors"

type termios struct{}

func getTermios(fd int) (*termios, error) { return nil, errors.ErrUnsupported }

func setQuiet(fd int, orig *termios) error { return errors.ErrUnsupported }
