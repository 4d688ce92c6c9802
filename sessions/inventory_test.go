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
			Stamps: []tools.Fingerprint{{Path: "/src/a.go", Size: 120, SHA256: "0123456789abcdef0123"}}},
		{Host: "devbox", Bash: []tools.BashSessionInfo{{ID: "b1", State: "exited", Command: "go test ./..."}}, LastKnown: true, Err: "host devbox is detached"},
	}
	want := []string{
		"devbox bash session b1 (exited): go test ./... [last known: host devbox is detached]",
		"local bash session b2 (running): make",
		"local editor read stamp /src/a.go (120 bytes, sha256 0123456789ab)",
	}
	if got := inv.lines(); !slices.Equal(got, want) {
		t.Errorf("lines() = %q, want %q", got, want)
	}
	if got := Inventory(nil).lines(); len(got) != 0 {
		t.Errorf("lines() of no inventory = %q, want none", got)
	}
}
