package snapshot

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the store runs on both sides, in the local worker and in the host daemon.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/hosts/snapshot", "myco.dev/internal/atomicfile")
}
