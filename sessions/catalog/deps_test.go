package catalog

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the catalog is below every front end and below the engine that wires it in.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, append([]string{"myco.dev/cli", "myco.dev/engine", "myco.dev/profiles", "myco.dev/hosts/hostd"}, depstest.Upper...)...)
}
