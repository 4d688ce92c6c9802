// Package needs lets a test depend on something of its machine: a program, root, /proc,
// the long tests. Where it is missing the test is skipped on a developer's machine and
// fails where CI is set: .ci/run installs every program, runs as root on Linux and never
// passes -short, so in CI no skip can hide a feature that does not work.
package needs

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// Missing ends the test for a missing need, described by format and args: a failure where
// CI is set, a skip elsewhere.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s; CI must run this test (.ci/run provides what it needs)", msg)
	}
	t.Skip(msg)
}

// Program returns the path of the program name; install says how to get it.
func Program(t testing.TB, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s is not installed (%s)", name, install)
	}
	return p
}

// Root needs root, for why (to chown to another user, to switch users).
func Root(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "%s needs root", why)
	}
}

// Long is the need of a test that takes long: -short skips it, except in CI.
func Long(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		Missing(t, "%s: not run with -short", what)
	}
}

// Proc needs /proc/PID/cwd, which Linux always has: missing there it is a failure too.
func Proc(t testing.TB) {
	t.Helper()
	if _, err := os.Readlink("/proc/self/cwd"); err != nil {
		if runtime.GOOS == "linux" {
			t.Fatalf("/proc/self/cwd: %v", err)
		}
		Missing(t, "no /proc on %s: a process's directory cannot be read", runtime.GOOS)
	}
}
