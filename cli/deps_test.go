package cli

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the terminal front ends call the session service as the HTTP handlers do, and
// know neither the handlers, the browser's views nor the supervisor.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, append([]string{"myco.dev/profiles", "myco.dev/sessions/catalog", "myco.dev/cmd"}, depstest.Upper...)...)
}
