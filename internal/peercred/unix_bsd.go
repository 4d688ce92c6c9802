//go:build darwin || freebsd

package peercred

import "golang.org/x/sys/unix"

// fdCred returns the uid of the process at the other end of the Unix socket fd, as it was
// when it connected (LOCAL_PEERCRED); the pid is not told, and is 0.
func fdCred(fd int) (Cred, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return Cred{}, err
	}
	return Cred{UID: int(cred.Uid)}, nil
}
