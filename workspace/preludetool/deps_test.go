package preludetool

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the prelude tool is a tool service over the workspace.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/workspace", "myco.dev/hosts/tools", "myco.dev/agent/model", "myco.dev/internal/atomicfile",
		// hosts/tools fences bash with the sandbox.
		"myco.dev/hosts/sandbox", "github.com/landlock-lsm/go-landlock", "kernel.org/pub/linux/libs/security/libcap/psx", "golang.org/x/sys")
}
