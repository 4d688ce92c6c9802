package hosts

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps hosts below sessions and the HTTP layers.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, append([]string{"myco.dev/sessions", "myco.dev/workspace"}, depstest.Upper...)...)
}
