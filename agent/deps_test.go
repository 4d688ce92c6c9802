package agent

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps the loop below the layers that use it.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, append([]string{"myco.dev/sessions", "myco.dev/hosts", "myco.dev/workspace"}, depstest.Upper...)...)
}
