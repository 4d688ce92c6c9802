package logging

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the logger's setup is the standard library's slog, nothing of ours.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/internal/logging")
}
