package hosts

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps hosts below sessions and the HTTP layers, and apart from the remote end
// (hosts/hostd): the controller and the host share only the protocol and the tools.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, append([]string{"myco.dev/sessions", "myco.dev/engine", "myco.dev/workspace", "myco.dev/hosts/hostd"}, depstest.Upper...)...)
}
