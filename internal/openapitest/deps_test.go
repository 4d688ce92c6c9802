package openapitest

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps the checker independent of what it checks: the standard library, the
// validator and package api's reader of server-sent events, none of the server.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/internal/openapitest", "myco.dev/api", "github.com/google/jsonschema-go")
}
