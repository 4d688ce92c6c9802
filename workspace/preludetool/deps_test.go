package preludetool

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the prelude tool is a tool service over the workspace.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/workspace", "myco.dev/hosts/tools", "myco.dev/agent/model", "myco.dev/internal/atomicfile")
}
