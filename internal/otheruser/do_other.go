//go:build !linux

package otheruser

import (
	"runtime"
	"testing"

	"myco.dev/internal/needs"
)

// Do would run f as uid; only Linux changes the uid of one thread, so elsewhere the test
// ends as [needs.Missing] says.
func Do(t testing.TB, uid int, f func()) {
	t.Helper()
	needs.Missing(t, "acting as another user needs Linux's per-thread setresuid, not %s", runtime.GOOS)
}
