package hosts

import (
	"testing"

	"myco/internal/depstest"
)

// TestDeps keeps hosts below sessions and the HTTP layers.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, append([]string{"myco/sessions", "myco/workspace"}, depstest.Upper...)...)
}
