package views

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps views pure: it renders view structs and knows nothing of the session
// service, the agent, the hosts or the config.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, "myco.dev/sessions", "myco.dev/agent", "myco.dev/hosts", "myco.dev/config", "myco.dev/handlers")
}
