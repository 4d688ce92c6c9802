package handlers

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps the handlers above the service: they never reach the agent loop, the
// protocols or the config. They are one profile's server, never the supervisor in front
// of the workers (package profiles): no connection handoff, which only the supervisor
// does, and no import of profiles.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, "myco.dev/agent/model/anthropic", "myco.dev/agent/model/responses", "myco.dev/agent/model/completions", "myco.dev/config",
		"myco.dev/profiles", "myco.dev/internal/handoff")
}
