package web

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps web plumbing: the standard library, our internal packages and the API's
// contract (whose envelope it writes) only (no chi, no templ; golang.org/x/sys comes with
// peercred's socket lookups). A server's domain
// errors reach it through a [Domain] function, never an import of sessions or profiles.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/internal", "myco.dev/api", "golang.org/x/sys")
}
