package sessions

import (
	"context"
	"fmt"
	"sort"

	"myco.dev/hosts/tools"
)

// Releaser is a [ToolHost] that ends the resources an owner holds (its bash sessions, its
// editor read stamps) on every host; the service calls it when the owner's session closes.
type Releaser interface {
	Release(owner string)
}

// Inventorier is a [ToolHost] that lists the tool handles an owner holds on every host, for
// the runtime facts that tell the model which live handles it has.
type Inventorier interface {
	Inventory(ctx context.Context, owner string) (Inventory, error)
}

// Inventory is the tool handles an owner holds, host by host.
type Inventory []HostHandles

// HostHandles is what an owner holds on one host.
type HostHandles struct {
	Host   string
	Bash   []tools.BashSessionInfo
	Stamps []tools.Fingerprint // the editor's read stamps
	// MCP is the owner's MCP servers on the host: running, or unavailable and why.
	MCP []tools.MCPServerInfo
	// LastKnown marks handles the host reported earlier, not now: it is not attached, or it
	// did not answer. Err says why.
	LastKnown bool
	Err       string
}

// lines describes the inventory one handle a line, sorted, as the runtime facts record it.
func (inv Inventory) lines() []string {
	var out []string
	for _, h := range inv {
		known := ""
		if h.LastKnown {
			known = " [last known: " + h.Err + "]"
		}
		for _, s := range h.Bash {
			out = append(out, fmt.Sprintf("%s bash session %s (%s): %s%s", h.Host, s.ID, s.State, s.Command, known))
		}
		for _, fp := range h.Stamps {
			out = append(out, fmt.Sprintf("%s editor read stamp %s (%d bytes, sha256 %.12s)%s", h.Host, fp.Path, fp.Size, fp.SHA256, known))
		}
		for _, m := range h.MCP {
			switch {
			case m.State == tools.MCPRunning && m.PID != 0:
				out = append(out, fmt.Sprintf("%s mcp server %s (running, pid %d)%s", h.Host, m.Server, m.PID, known))
			case m.Why != "":
				out = append(out, fmt.Sprintf("%s mcp server %s (%s: %s; its tools answer an error until it starts)%s", h.Host, m.Server, m.State, m.Why, known))
			default:
				out = append(out, fmt.Sprintf("%s mcp server %s (%s)%s", h.Host, m.Server, m.State, known))
			}
		}
	}
	sort.Strings(out)
	return out
}
