package sessions

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: the session service is below every front end, and free of the config and the
// wire protocols (its catalog, in sessions/catalog, has them), which the HTTP handlers
// that call it must not depend on.
func TestDeps(t *testing.T) {
	depstest.Forbid(t, append([]string{"myco.dev/cli", "myco.dev/profiles", "myco.dev/sessions/catalog", "myco.dev/engine", "myco.dev/config",
		"myco.dev/agent/model/anthropic", "myco.dev/agent/model/responses", "myco.dev/agent/model/completions"}, depstest.Upper...)...)
}
