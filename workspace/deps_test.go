package workspace

import (
	"testing"

	"myco/internal/depstest"
)

// TestDeps keeps the workspace package on the standard library alone.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco/workspace")
}
