//go:build !linux && !darwin && !freebsd

package peercred

// fdCred is not available here.
func fdCred(fd int) (Cred, error) { return Cred{}, ErrUnavailable }
