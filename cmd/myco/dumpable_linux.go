package main

import "syscall"

// undumpable marks the process as not dumpable: /proc/PID/environ, mem and the like
// become root's, so a tool command cannot read the process's credentials from there.
func undumpable() { syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0) }
