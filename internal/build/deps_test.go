package build

import (
	"testing"

	"myco.dev/internal/depstest"
)

func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/internal/build")
}
