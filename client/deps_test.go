package client

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps the client a client: it takes the API's types from handlers and sessions,
// and never the server's wiring, the config or the supervisor.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, "myco.dev/cmd/myco", "myco.dev/config", "myco.dev/profiles", "myco.dev/internal/handoff")
}
