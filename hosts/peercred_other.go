//go:build !linux && !darwin && !freebsd

package hosts

// peerCred is not available here; see errNoPeerCred.
func peerCred(fd int) (uid, pid int, err error) { return 0, 0, errNoPeerCred }
