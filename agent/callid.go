package agent

import (
	"strconv"
	"strings"

	"myco.dev/agent/model"
)

// Tool call ids must be unique across a conversation: a provider refuses every request whose
// history has two calls with one id (Anthropic: "tool_use ids must be unique"), so a single
// duplicate from a model would brick the session, --resume included. They must also fit the
// strictest provider's pattern, Anthropic's ^[a-zA-Z0-9_-]+$, since a session can move
// between models. The ids are checked in one place for every protocol: where a response
// joins the history ([run.loop]) and where a stored history is loaded ([RepairHistory]).

// maxCallID bounds the length of a call id, so a hostile one cannot bloat every request.
const maxCallID = 64

// validCallID reports whether id can be sent to every provider.
func validCallID(id string) bool {
	if id == "" || len(id) > maxCallID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return false
		}
	}
	return true
}

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// callIDs is the set of tool call ids a conversation uses.
type callIDs map[string]bool

// usedCallIDs returns the ids of the tool calls of h's assistant messages.
func usedCallIDs(h []model.Message) callIDs {
	ids := callIDs{}
	for _, m := range h {
		if m.Role != model.Assistant {
			continue
		}
		for _, p := range m.Parts {
			if p.Kind == model.KindToolCall && p.ToolCall != nil {
				ids[p.ToolCall.ID] = true
			}
		}
	}
	return ids
}

// claim returns id if it is valid and unused, and otherwise a fresh id derived from it:
// its characters outside [A-Za-z0-9_-] replaced by "_", cut short if long, then "_2",
// "_3", … until unused. The result is recorded as used. The same history always gets the
// same fresh ids, so a repaired history is stable from one load to the next.
func (ids callIDs) claim(id string) string {
	if validCallID(id) && !ids[id] {
		ids[id] = true
		return id
	}
	var b strings.Builder
	for i := 0; i < len(id) && b.Len() < maxCallID-8; i++ {
		if idByte(id[i]) {
			b.WriteByte(id[i])
		} else {
			b.WriteByte('_')
		}
	}
	base := b.String()
	if base == "" {
		base = "call"
	}
	if !ids[base] {
		ids[base] = true
		return base
	}
	for n := 2; ; n++ {
		c := base + "_" + strconv.Itoa(n)
		if !ids[c] {
			ids[c] = true
			return c
		}
	}
}

// rename is one tool call's id before and after [callIDs.claimCalls].
type rename struct{ from, to string }

// claimCalls claims an id for every tool call of m, in order. It returns m with the calls
// that needed a fresh id copied and renamed (m itself when none did; the parts slice is
// then shared), and the renames of all calls in call order.
func (ids callIDs) claimCalls(m model.Message) (model.Message, []rename) {
	var renames []rename
	copied := false
	for i, p := range m.Parts {
		if p.Kind != model.KindToolCall || p.ToolCall == nil {
			continue
		}
		id := ids.claim(p.ToolCall.ID)
		renames = append(renames, rename{from: p.ToolCall.ID, to: id})
		if id == p.ToolCall.ID {
			continue
		}
		if !copied {
			m.Parts = append([]model.Part(nil), m.Parts...)
			copied = true
		}
		call := *p.ToolCall
		call.ID = id
		m.Parts[i].ToolCall = &call
	}
	return m, renames
}

// renamed reports whether any call of renames got a fresh id.
func renamed(renames []rename) bool {
	for _, r := range renames {
		if r.from != r.to {
			return true
		}
	}
	return false
}

// renameResults returns parts with the tool results renamed to follow renames: the k-th
// result that answers id X goes to the k-th call that had id X, in order. Results beyond
// the calls are left as they are (RepairHistory drops them). parts is not modified.
func renameResults(parts []model.Part, renames []rename) []model.Part {
	queue := map[string][]string{}
	for _, r := range renames {
		queue[r.from] = append(queue[r.from], r.to)
	}
	out, copied := parts, false
	for i, p := range parts {
		if p.Kind != model.KindToolResult || p.ToolResult == nil {
			continue
		}
		q := queue[p.ToolResult.CallID]
		if len(q) == 0 {
			continue
		}
		to := q[0]
		queue[p.ToolResult.CallID] = q[1:]
		if to == p.ToolResult.CallID {
			continue
		}
		if !copied {
			out, copied = append([]model.Part(nil), parts...), true
		}
		res := *p.ToolResult
		res.CallID = to
		out[i].ToolResult = &res
	}
	return out
}

// clipID cuts a model's id for a log line: it may be of any length.
func clipID(id string) string {
	if len(id) <= 2*maxCallID {
		return id
	}
	return id[:2*maxCallID] + "…"
}
