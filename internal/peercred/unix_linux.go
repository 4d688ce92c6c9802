package peercred

import "golang.org/x/sys/unix"

// fdCred returns the uid and pid of the process at the other end of the Unix socket fd,
// as they were when it connected (SO_PEERCRED).
func fdCred(fd int) (Cred, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return Cred{}, err
	}
	return Cred{UID: int(cred.Uid), PID: int(cred.Pid)}, nil
}
