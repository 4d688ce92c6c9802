package profiles

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps the supervisor apart from what runs in a profile's worker: it routes
// connections and bytes, and never reaches a profile's server, its engine, sessions or
// tools; the worker's side of the pool serves whatever handler it is given.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, "myco.dev/handlers", "myco.dev/engine", "myco.dev/sessions", "myco.dev/agent", "myco.dev/hosts", "myco.dev/workspace", "myco.dev/config")
}
