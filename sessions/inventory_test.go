package sessions

import (
	"slices"
	"testing"

	"myco.dev/hosts/tools"
)

// TestInventoryLines pins the lines the runtime facts record for an inventory: a changed
// line reads as a changed inventory, and the model is told of it again.
func TestInventoryLines(t *testing.T) {
	inv := Inventory{
		{Host: "local", Bash: []tools.BashSessionInfo{{ID: "b2", State: "running", Command: "make"}},
			Stamps: []tools.Fingerprint{{Path: "/src/a.go", Size: 120, SHA256: "0123456789abcdef0123"}},
			MCP:    []tools.MCPServerInfo{{Server: "gh", State: tools.MCPRunning, PID: 42}, {Server: "fs", State: tools.MCPUnavailable, Why: "its process ended (exit status 3)"}}},
		{Host: "devbox", Bash: []tools.BashSessionInfo{{ID: "b1", State: "exited", Command: "go test ./..."}}, LastKnown: true, Err: "host devbox is detached",
			MCP: []tools.MCPServerInfo{{Server: "db", State: tools.MCPRunning, PID: 7}}},
	}
	want := []string{
		"devbox bash session b1 (exited): go test ./... [last known: host devbox is detached]",
		"devbox mcp server db (running, pid 7) [last known: host devbox is detached]",
		"local bash session b2 (running): make",
		"local editor read stamp /src/a.go (120 bytes, sha256 0123456789ab)",
		"local mcp server fs (unavailable: its process ended (exit status 3); its tools answer an error until it starts)",
		"local mcp server gh (running, pid 42)",
	}
	if got := inv.lines(); !slices.Equal(got, want) {
		t.Errorf("lines() = %q, want %q", got, want)
	}
	if got := Inventory(nil).lines(); len(got) != 0 {
		t.Errorf("lines() of no inventory = %q, want none", got)
	}
}
