package tools

// Resources is what an owner holds in a host's tools, keyed as the inventory frame carries
// it: the bash sessions, the editor's read stamps and the MCP servers.
type Resources struct {
	Bash   []BashSessionInfo `json:"bash"`
	Editor []Fingerprint     `json:"str_replace_based_edit_tool"`
	// MCP is the owner's MCP servers on the host: those it started, and those that are
	// unavailable (their tools answer an error). Servers it never called are left out.
	MCP []MCPServerInfo `json:"mcp,omitempty"`
}

// MCPServerInfo is the state of one MCP server for one owner.
type MCPServerInfo struct {
	Server string `json:"server"`
	// State is MCPRunning or MCPUnavailable.
	State string `json:"state"`
	PID   int    `json:"pid,omitempty"` // a running stdio server's process (group)
	// Why says, in one line, why an unavailable server is not running: how it ended, or
	// why it did not start.
	Why string `json:"why,omitempty"`
}

// The states of an [MCPServerInfo].
const (
	MCPRunning     = "running"     // the owner's instance runs
	MCPUnavailable = "unavailable" // it did not start, or it ended; its tools answer an error
)

// Inventorier is a tool that keeps resources per owner and can list them: it adds the
// owner's to r.
type Inventorier interface {
	Inventory(owner string, r *Resources)
}

// Releaser is a tool that keeps resources per owner and can end them.
type Releaser interface {
	Release(owner string)
}

// Inventory collects the owner's resources from every tool of ts that keeps any: what the
// local worker observes directly and what a host answers to an inventory frame.
func Inventory(ts []Tool, owner string) Resources {
	var r Resources
	for _, t := range ts {
		if inv, ok := t.(Inventorier); ok {
			inv.Inventory(owner, &r)
		}
	}
	return r
}

// Release ends the owner's resources in every tool of ts that keeps any.
func Release(ts []Tool, owner string) {
	for _, t := range ts {
		if r, ok := t.(Releaser); ok {
			r.Release(owner)
		}
	}
}
