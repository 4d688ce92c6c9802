// Package privdir makes and checks the private directories that hold myco's sockets (the
// host daemon's): owned by the user, closed to everyone else, and reached only through
// directories no other user can change.
//
// A directory in a shared place such as /tmp can be made by anyone first, under the name
// myco will use; a socket in a directory that another user owns, or can enter, or that is
// a symbolic link to one of theirs, can be replaced, or its connections caught. So the
// directory is checked on the descriptor actually opened, without following a symbolic
// link, and every directory on the way to it must belong to the user or root and be
// writable by no one else (or, like /tmp, be sticky).
package privdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Ensure creates dir (and its missing parents) with mode 0700 when missing and checks it: a directory, not a
// symbolic link, owned by this user, with no permission for group or others, reached
// through directories that only this user or root can change. A directory that fails is
// refused, never repaired: the error names it, what is wrong, and the fix.
func Ensure(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%s: a private directory must be an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	parent, name := filepath.Split(dir)
	if name == "" {
		return fmt.Errorf("%s cannot be a private directory", dir)
	}
	if _, err := os.Lstat(parent); errors.Is(err, os.ErrNotExist) {
		// Missing on the way: made private too, and checked the same way.
		if err := Ensure(filepath.Clean(parent)); err != nil {
			return err
		}
	}
	real, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return fmt.Errorf("check the way to %s: %w", dir, err)
	}
	if err := checkWay(real, dir); err != nil {
		return err
	}
	pfd, err := unix.Open(real, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", parent, err)
	}
	defer unix.Close(pfd)
	if err := unix.Mkdirat(pfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}
	fd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		var st unix.Stat_t
		if unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFLNK:
				return fmt.Errorf("%s is a symbolic link, where myco keeps private sockets: another user may have made it to catch them. Remove it (rm %s), or set TMPDIR to a directory of yours", dir, dir)
			case unix.S_IFDIR:
			default:
				return fmt.Errorf("%s is not a directory; remove it, or set TMPDIR to a directory of yours", dir)
			}
		}
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("check %s: %w", dir, err)
	}
	return checkPrivate(dir, int(st.Uid), os.FileMode(st.Mode&0o7777))
}

// checkPrivate refuses a private directory that is not the user's alone.
func checkPrivate(dir string, uid int, mode os.FileMode) error {
	switch {
	case uid != os.Geteuid():
		return fmt.Errorf("%s belongs to uid %d, not to you (uid %d): another user may have made it to catch myco's sockets. Remove it (as its owner or root: rm -r %s), or set TMPDIR to a directory of yours", dir, uid, os.Geteuid(), dir)
	case mode.Perm()&0o077 != 0:
		return fmt.Errorf("%s has mode %04o: others can enter it, and could reach or replace myco's sockets in it. Make it private (chmod 700 %s), or remove it", dir, mode.Perm(), dir)
	}
	return nil
}

// checkWay checks every directory of real, the parent of dir with its symbolic links
// resolved: each must belong to the user or root, and no one else may write to it unless
// it is sticky (as /tmp is), where no one can rename or remove another's entries.
func checkWay(real, dir string) error {
	p := real
	for {
		info, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("check the way to %s: %w", dir, err)
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if ok {
			uid := int(st.Uid)
			mode := info.Mode()
			switch {
			case uid != 0 && uid != os.Geteuid():
				return fmt.Errorf("%s, on the way to %s, belongs to uid %d, who could replace what is in it; set TMPDIR to a directory of yours", p, dir, uid)
			case mode.Perm()&0o022 != 0 && mode&os.ModeSticky == 0:
				return fmt.Errorf("%s, on the way to %s, can be written by others (mode %04o) and is not sticky, so they could replace what is in it; set TMPDIR to a directory of yours", p, dir, mode.Perm())
			}
		}
		if p == "/" || !strings.Contains(p, "/") {
			return nil
		}
		p = filepath.Dir(p)
	}
}

// Tmp returns the user's private temporary directory, myco-UID in $TMPDIR (when absolute)
// or /tmp, as tmux does; tmp is the value of $TMPDIR.
func Tmp(tmp string) string {
	if !filepath.IsAbs(tmp) {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, fmt.Sprintf("myco-%d", os.Getuid()))
}
