package handlers

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps the handlers above the service: they never reach the agent loop, the
// protocols or the config.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, "myco.dev/agent/model/anthropic", "myco.dev/agent/model/responses", "myco.dev/agent/model/completions", "myco.dev/config")
}
