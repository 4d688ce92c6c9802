package workspace

import (
	"testing"

	"myco/internal/depstest"
)

// TestDeps keeps the workspace package on the standard library and a file helper.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco/workspace", "myco/internal/atomicfile")
}
