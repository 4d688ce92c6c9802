package sandbox

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the sandbox runs on both sides of the host protocol and imports nothing of
// myco: Landlock and the system calls only.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/hosts/sandbox", "github.com/landlock-lsm/go-landlock", "kernel.org/pub/linux/libs/security/libcap/psx", "golang.org/x/sys")
}
