package tools

// Inventorier is a tool that keeps resources per owner and can list them: the bash
// sessions, the editor's read stamps.
type Inventorier interface {
	Inventory(owner string) any
}

// Releaser is a tool that keeps resources per owner and can end them.
type Releaser interface {
	Release(owner string)
}

// Inventory collects the owner's resources from every tool of ts that keeps any, keyed by
// tool name: what the local worker observes directly and what a host answers to an
// inventory frame.
func Inventory(ts []Tool, owner string) map[string]any {
	out := map[string]any{}
	for _, t := range ts {
		if inv, ok := t.(Inventorier); ok {
			out[t.Name()] = inv.Inventory(owner)
		}
	}
	return out
}

// Release ends the owner's resources in every tool of ts that keeps any.
func Release(ts []Tool, owner string) {
	for _, t := range ts {
		if r, ok := t.(Releaser); ok {
			r.Release(owner)
		}
	}
}
