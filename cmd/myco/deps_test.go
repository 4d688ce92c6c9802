package main

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: cmd/myco parses flags, resolves the profile and wires. It depends on every
// package through the ones it wires, but the agent's run loop and its model clients are
// the session service's (package sessions and its catalog), and pages are the handlers':
// cmd/myco imports neither the agent (any of it) nor views.
func TestDeps(t *testing.T) {
	depstest.ForbidImports(t, "myco.dev/agent", "myco.dev/views", "github.com/a-h/templ", "github.com/go-chi/chi")
}
