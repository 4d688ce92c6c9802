package client

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps the client a client that any program can link: the API's contract
// (package api) and the standard library, nothing of the server (no handlers, sessions,
// templ, chi, goldmark, chroma or bluemonday).
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/api", "myco.dev/client")
}
