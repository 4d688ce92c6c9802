package cli

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the terminal front ends call the session service as the HTTP handlers do, and
// know neither the handlers, the browser's views nor the supervisor; the service is built
// for them (package engine, started by cmd/myco), its catalog out of their reach.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, append([]string{"myco.dev/profiles", "myco.dev/sessions/catalog", "myco.dev/engine", "myco.dev/cmd"}, depstest.Upper...)...)
}
