package agent

import "myco.dev/agent/model"

// RepairHistory returns a copy of h that satisfies the invariants every model request needs,
// and whether anything had to change:
//
//   - every tool call of an assistant message is answered exactly once by a tool result in the
//     next message, which is a user message; the results come first in that message, in call
//     order, followed by its other parts in their original order;
//   - a call without a result gets an Unknown result saying its outcome is unknown (this
//     includes the calls of a final assistant message);
//   - a result that answers no call of the previous assistant message is removed, and so is a
//     second result for the same call;
//   - a message left without parts is removed;
//   - every tool call id is unique in the history and fits [A-Za-z0-9_-]{1,64}: a call
//     whose id was used by an earlier call, or does not fit, gets a fresh id (see
//     [callIDs.claim]), and so does its result, pairing the calls and results that share
//     an id in order (the first result for id X answers the first call that had id X).
//
// The copy has its own message and part slices; the values parts point to are shared,
// except the tool calls and results that were renamed, which are copies.
func RepairHistory(h []model.Message) (fixed []model.Message, changed bool) {
	fixed = make([]model.Message, 0, len(h)+1)
	ids := callIDs{}
	for i := 0; i < len(h); i++ {
		m := h[i]
		calls := m.ToolCalls()
		if m.Role != model.Assistant || len(calls) == 0 {
			parts, dropped := withoutResults(m.Parts)
			if dropped {
				changed = true
			}
			if len(parts) == 0 {
				changed = true
				continue
			}
			fixed = append(fixed, model.Message{Role: m.Role, Parts: parts})
			continue
		}
		m, renames := ids.claimCalls(m)
		fresh := renamed(renames)
		if fresh {
			changed = true
			calls = m.ToolCalls()
		}
		fixed = append(fixed, model.Message{Role: m.Role, Parts: append([]model.Part(nil), m.Parts...)})
		var next []model.Part
		if i+1 < len(h) && h[i+1].Role == model.User {
			i++
			next = h[i].Parts
			if fresh {
				next = renameResults(next, renames)
			}
		}
		parts, ok := answer(calls, next)
		if !ok {
			changed = true
		}
		fixed = append(fixed, model.Message{Role: model.User, Parts: parts})
	}
	return fixed, changed
}

// answer returns the parts of the user message after an assistant message with calls: one
// result per call in call order, then the other parts of next. ok reports that next already
// had exactly that shape.
func answer(calls []model.ToolCall, next []model.Part) (parts []model.Part, ok bool) {
	found := make(map[string]*model.ToolResult, len(calls))
	for _, p := range next {
		if p.Kind == model.KindToolResult && p.ToolResult != nil {
			if _, dup := found[p.ToolResult.CallID]; !dup {
				found[p.ToolResult.CallID] = p.ToolResult
			}
		}
	}
	ok = len(next) >= len(calls)
	parts = make([]model.Part, 0, len(calls)+len(next))
	for i, c := range calls {
		r := found[c.ID]
		if r == nil {
			r = &model.ToolResult{CallID: c.ID, Text: unknownText, Unknown: true}
		}
		// Two calls sharing an id cannot both be answered by one result.
		delete(found, c.ID)
		if ok && (next[i].Kind != model.KindToolResult || next[i].ToolResult != r) {
			ok = false
		}
		parts = append(parts, model.Part{Kind: model.KindToolResult, ToolResult: r})
	}
	rest, dropped := withoutResults(next[min(len(calls), len(next)):])
	if ok && dropped {
		ok = false
	}
	if !ok {
		// Results were moved or dropped: keep every other part of next, in order.
		rest, _ = withoutResults(next)
	}
	return append(parts, rest...), ok
}

// withoutResults returns parts without its tool results, and whether there were any.
func withoutResults(parts []model.Part) ([]model.Part, bool) {
	out := make([]model.Part, 0, len(parts))
	for _, p := range parts {
		if p.Kind == model.KindToolResult {
			continue
		}
		out = append(out, p)
	}
	return out, len(out) != len(parts)
}
