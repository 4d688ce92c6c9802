package workspace

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps the workspace package on the standard library and a file helper.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/workspace", "myco.dev/internal/atomicfile")
}
