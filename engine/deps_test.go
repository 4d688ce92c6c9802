package engine

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: a profile's engine is below every front end and apart from the remote end of
// the hosts: it builds the session service that the handlers and the terminal front ends
// call, and knows none of them, nor the supervisor.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, append([]string{"myco.dev/cli", "myco.dev/profiles", "myco.dev/hosts/hostd", "myco.dev/client", "myco.dev/cmd"}, depstest.Upper...)...)
}
