package mcp

import (
	"strings"
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps the package a tool source below the harness: of myco's packages it
// imports only agent/model, hosts/tools and internal ones, so that both the local worker
// and the host daemon can hold a Set; and nothing of the HTTP layers.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, depstest.Upper...)
	allowed := []string{"myco.dev/hosts/mcp", "myco.dev/agent/model", "myco.dev/hosts/tools", "myco.dev/hosts/sandbox"}
	for _, dep := range depstest.Deps(t) {
		if !strings.HasPrefix(dep, "myco.dev/") || strings.HasPrefix(dep, "myco.dev/internal/") {
			continue
		}
		ok := false
		for _, a := range allowed {
			ok = ok || dep == a
		}
		if !ok {
			t.Errorf("the package depends on %s; of myco's packages it may import only %s and internal ones", dep, strings.Join(allowed[1:], ", "))
		}
	}
}
