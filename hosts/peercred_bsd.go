//go:build darwin || freebsd

package hosts

import "golang.org/x/sys/unix"

// peerCred returns the uid of the process at the other end of the Unix socket fd, as it
// was when it connected (LOCAL_PEERCRED); the pid is not told, and is 0.
func peerCred(fd int) (uid, pid int, err error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return 0, 0, err
	}
	return int(cred.Uid), 0, nil
}
