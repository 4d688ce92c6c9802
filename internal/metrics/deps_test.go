package metrics

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the metrics are the standard library only. The Prometheus parser that the
// tests read the exposition with is no dependency of the package, so no binary links it.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/internal/metrics")
}
