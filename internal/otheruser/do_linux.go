package otheruser

import (
	"runtime"
	"syscall"
	"testing"

	"myco.dev/internal/needs"
)

// Do runs f on a thread of its own whose effective (and file system) uid is uid, so that
// the sockets f makes belong to uid, and waits for it. The thread is never given back: it
// ends with f's goroutine. Changing uid needs root: without it the test ends as
// [needs.Root] says.
func Do(t testing.TB, uid int, f func()) {
	t.Helper()
	needs.Root(t, "acting as another user")
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Raw, so that only this thread changes (syscall.Setresuid changes them all).
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
			done <- e
			return
		}
		f()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatalf("become uid %d: %v", uid, err)
	}
}
