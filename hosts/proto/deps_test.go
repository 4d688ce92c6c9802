package proto

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the protocol, spoken by both sides, knows the tools' results and the
// snapshots' types, and nothing of either side.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/hosts/proto", "myco.dev/hosts/tools", "myco.dev/agent/model", "myco.dev/hosts/snapshot", "myco.dev/internal/atomicfile",
		// The tools fence commands in through the sandbox (hosts/tools imports it).
		"myco.dev/hosts/sandbox", "github.com/landlock-lsm/go-landlock", "kernel.org/pub/linux/libs/security/libcap/psx", "golang.org/x/sys")
}
