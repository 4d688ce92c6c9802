package sessions

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps sessions below the HTTP layers.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, depstest.Upper...)
}
