package tools

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the tool services run on both sides and know only the neutral model types.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/hosts/tools", "myco.dev/agent/model")
}
