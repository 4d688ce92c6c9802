package views

import (
	"testing"

	"myco/internal/depstest"
)

// TestDeps keeps views pure: it renders view structs and knows nothing of the session
// service, the agent, the hosts or the config.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, "myco/sessions", "myco/agent", "myco/hosts", "myco/config", "myco/handlers")
}
