package agent

import (
	"testing"

	"myco/internal/depstest"
)

// TestDeps keeps the loop below the layers that use it.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, append([]string{"myco/sessions", "myco/hosts", "myco/workspace"}, depstest.Upper...)...)
}
