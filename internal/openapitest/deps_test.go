package openapitest

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps the checker independent of what it checks: the standard library only.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/internal/openapitest")
}
