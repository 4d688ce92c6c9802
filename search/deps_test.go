package search

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the index is below the front ends: it reads sessions, and knows neither the
// handlers, the views nor the terminal.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, append([]string{"myco.dev/cli", "myco.dev/profiles", "myco.dev/engine", "myco.dev/cmd"}, depstest.Upper...)...)
}
