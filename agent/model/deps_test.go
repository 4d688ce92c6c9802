package model

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the provider-neutral messages and streams are the bottom of the agent.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/agent/model")
}
