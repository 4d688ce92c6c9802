package reaper

import "syscall"

// sysProcAttr puts the reaper in a process group of its own, out of reach of the
// terminal's signals, and asks Linux to send it SIGTERM when its parent dies ([Main]
// checks that the parent is really gone: the signal also comes when the parent's thread
// that started it ends).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
