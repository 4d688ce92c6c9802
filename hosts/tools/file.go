package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// openRegular opens path for reading if it is a regular file, and refuses anything else
// (a FIFO, a device, a socket, a directory) with an error naming the path and its type.
// It checks the type before opening, opens without blocking (O_NONBLOCK: opening a FIFO
// with no writer would wait forever) and checks the open file again, so that a FIFO
// swapped in between cannot block the call either. Caller must close the file.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if err := regular(path, info); err != nil {
		return nil, nil, err
	}
	return openChecked(path)
}

// openChecked is the second half of [openRegular]: whatever path is by now, it opens it
// without blocking and keeps it only if it is a regular file.
func openChecked(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err == nil {
		err = regular(path, info)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

func regular(path string, info fs.FileInfo) error {
	if info.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s is %s, not a regular file; only regular files are read", path, fileKind(info.Mode()))
}

// fileKind names the type of a file that is not regular: "a named pipe (FIFO)".
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "an irregular file"
}

// createTemp creates a new file in dir named prefix and a random suffix, with perm as
// os.OpenFile applies it (less the umask). os.CreateTemp always uses 0600.
func createTemp(dir, prefix string, perm fs.FileMode) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, &fs.PathError{Op: "createtemp", Path: filepath.Join(dir, prefix+"*"), Err: fs.ErrExist}
}
