package handlers

import (
	"testing"

	"myco/internal/depstest"
)

// TestDeps keeps the handlers above the service: they never reach the agent loop, the
// protocols or the config.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, "myco/agent/model/anthropic", "myco/agent/model/responses", "myco/agent/model/completions", "myco/config")
}
