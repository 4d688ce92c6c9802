//go:build !linux

package reaper

import "syscall"

// sysProcAttr puts the reaper in a process group of its own, out of reach of the
// terminal's signals. There is no parent-death signal here: end of file on the pipe is
// the only notice.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
