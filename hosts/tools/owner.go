package tools

// Resources is what an owner holds in a host's tools, keyed as the inventory frame carries
// it: the bash sessions and the editor's read stamps.
type Resources struct {
	Bash   []BashSessionInfo `json:"bash"`
	Editor []Fingerprint     `json:"str_replace_based_edit_tool"`
}

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
