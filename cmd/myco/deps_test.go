package main

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps: cmd/myco parses flags, resolves the profile and wires. It depends on every
// package through the ones it wires, but the agent's run loop and its model clients are
// the session service's, the session service with its catalog, prompt and tools is the
// profile's engine (package engine), and pages are the handlers': cmd/myco imports none of
// the agent, sessions (its catalog included), the tools, the MCP client, the prelude tool
// or views.
func TestDeps(t *testing.T) {
	depstest.ForbidImports(t, "myco.dev/agent", "myco.dev/sessions", "myco.dev/hosts/tools", "myco.dev/hosts/mcp",
		"myco.dev/workspace/preludetool", "myco.dev/views", "github.com/a-h/templ", "github.com/go-chi/chi")
}

// TestLinksNoPrometheus: the binary writes its metrics with internal/metrics and links no
// Prometheus module nor protobuf, whose package initialisation (the default collectors,
// the protobuf registry) would run at every start of myco, myco -p's included. The tests
// read the metrics with prometheus/common/expfmt, which only they link.
func TestLinksNoPrometheus(t *testing.T) {
	depstest.Forbid(t, "github.com/prometheus", "google.golang.org/protobuf")
}
