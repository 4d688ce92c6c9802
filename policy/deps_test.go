package policy

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: policy is pure decisions: it imports nothing of myco.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/policy")
}
