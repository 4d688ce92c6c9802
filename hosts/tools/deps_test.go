package tools

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the tool services run on both sides and know only the neutral model types.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/hosts/tools", "myco.dev/agent/model", "myco.dev/hosts/sandbox", "github.com/landlock-lsm/go-landlock", "kernel.org/pub/linux/libs/security/libcap/psx", "golang.org/x/sys")
}
