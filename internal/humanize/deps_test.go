package humanize

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the words are shared by the views and the terminal, so the package stands on
// the standard library alone.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/internal/humanize")
}
