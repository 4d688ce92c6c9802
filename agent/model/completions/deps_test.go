package completions

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: a wire protocol knows the neutral model types and nothing else of ours.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/agent/model")
}
