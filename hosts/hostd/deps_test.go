package hostd

import (
	"strings"
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps the remote end apart from the controller and below sessions and the HTTP
// layers. It may use the protocol, the tools and internal/...: the two sides share only
// those.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, append([]string{"myco.dev/sessions", "myco.dev/workspace", "myco.dev/config", "myco.dev/profiles"}, depstest.Upper...)...)
	for _, dep := range depstest.Deps(t) {
		switch {
		case dep == "myco.dev/hosts": // its subpackages proto and tools are allowed
			t.Errorf("the package depends on %s, the controller side", dep)
		case (dep == "myco.dev/agent" || strings.HasPrefix(dep, "myco.dev/agent/")) && dep != "myco.dev/agent/model":
			t.Errorf("the package depends on %s; of the agent, only agent/model (the tools' results) is allowed", dep)
		}
	}
}
