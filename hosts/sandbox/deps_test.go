package sandbox

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the sandbox runs on both sides of the host protocol and imports nothing of
// myco.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/hosts/sandbox")
}
