package api

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps the contract apart from the server: the standard library only, so that a
// program that speaks the API links none of myco's server (nor templ, chi, goldmark, …).
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/api")
}
