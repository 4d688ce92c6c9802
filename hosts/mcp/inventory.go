package mcp

import (
	"strings"
	"unicode/utf8"

	"myco.dev/hosts/tools"
)

// maxWhy bounds the reason an inventory gives for an unavailable server: it goes into
// the runtime notes of every turn that follows.
const maxWhy = 300

var _ tools.Inventorier = (*Set)(nil)

// Inventory adds the MCP servers owner started to r, in name order (it makes the Set a
// [tools.Inventorier]): running, or unavailable and why (how its instance ended, or why
// its last start failed). A server owner never called is left out, and so is one whose
// tools could not be listed, which is the Set's state rather than the owner's
// ([Set.Statuses], [UnlistedInfo]).
func (s *Set) Inventory(owner string, r *tools.Resources) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, srv := range s.servers {
		name := srv.cfg.Name
		sl := s.slots[slotKey{owner, name}]
		switch {
		case sl != nil && sl.inst != nil && sl.inst.why == "":
			r.MCP = append(r.MCP, tools.MCPServerInfo{Server: name, State: tools.MCPRunning, PID: sl.inst.pid})
		case sl != nil && sl.why != "":
			r.MCP = append(r.MCP, tools.MCPServerInfo{Server: name, State: tools.MCPUnavailable, Why: OneLine(sl.why, maxWhy)})
		}
	}
}

// UnlistedInfo is the inventory entry of a server whose tools could not be listed, for
// why: unavailable to every owner.
func UnlistedInfo(server, why string) tools.MCPServerInfo {
	return tools.MCPServerInfo{Server: server, State: tools.MCPUnavailable, Why: OneLine("its tools could not be listed: "+why, maxWhy)}
}

// OneLine returns s on one line (its lines joined by " / ", blanks squeezed), cut to at
// most max bytes at a UTF-8 boundary, with "…" when cut.
func OneLine(s string, max int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			lines = append(lines, l)
		}
	}
	s = strings.Join(lines, " / ")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
