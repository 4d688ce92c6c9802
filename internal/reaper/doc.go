// Package reaper makes the process groups a myco process starts die with it, however it
// ends: SIGKILL included. Killing a group on the way out is not enough, because a process
// killed with SIGKILL runs no code, and a parent-death signal reaches only a group's
// leader, not the processes in its group (bash's `sleep`).
//
// A reaper is a small process per myco process: the myco binary itself in a hidden mode
// that calls [Main]. It holds the read end of a pipe whose write end only its myco has.
// myco writes "+PGID" when it starts a process group and "-PGID" once that group is dead;
// when the pipe reaches end of file, because myco exited or was killed, the reaper
// SIGKILLs every group still registered and exits. On Linux it also gets a parent-death
// signal, as a second line of defence. It ignores the terminal's signals (and runs in a
// process group of its own), so Ctrl-C or a hangup cannot end it before its myco.
//
// The cost per process group is one pipe write when it starts and one when it ends; the
// reaper process is started once, before the first group, by [Reaper.Prepare] (or
// [Reaper.Track]).
//
// It imports only the standard library.
package reaper
