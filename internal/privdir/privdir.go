// Package privdir makes and checks the private directories that hold myco's sockets (the
// host daemon's, the profile workers'): owned by the user, closed to everyone else.
package privdir

import (
	"fmt"
	"os"
	"syscall"
)

// Ensure creates dir (and its parents) with mode 0700 when missing, refuses it when it is
// not a directory or belongs to another user (who could read or replace the sockets in
// it), and takes away group and other permissions it has.
func Ensure(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err // "mkdir DIR: why", naming the directory once
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check %s: %w", dir, err)
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	switch {
	case !info.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case ok && int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s belongs to another user (uid %d); remove it or set TMPDIR to a directory of yours", dir, st.Uid)
	case info.Mode().Perm()&0o077 != 0:
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("make %s private: %w", dir, err)
		}
	}
	return nil
}

// Tmp returns the user's private temporary directory, myco-UID in $TMPDIR (when absolute)
// or /tmp, as tmux does; tmp is the value of $TMPDIR.
func Tmp(tmp string) string {
	if tmp == "" || tmp[0] != '/' {
		tmp = "/tmp"
	}
	return fmt.Sprintf("%s/myco-%d", tmp, os.Getuid())
}
