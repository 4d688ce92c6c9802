package responses

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"myco.dev/agent/model"
)

// finish assembles the message from the output items and yields Done. An output item of
// a type it reads that does not decode is a badItemError.
func (d *decoder) finish(resp *response) error {
	if resp == nil {
		resp = &response{}
	}
	// The terminal response lists the output items too; use them for any item whose done
	// event never arrived.
	for i, raw := range resp.Output {
		var shape struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(raw, &shape); err != nil {
			return badItemError{fmt.Errorf("output[%d]: %w", i, err)}
		}
		if !knownItem(shape.Type) {
			continue
		}
		var it item
		if err := json.Unmarshal(raw, &it); err != nil {
			return badItemError{fmt.Errorf("output[%d] (%s): %w", i, shape.Type, err)}
		}
		if it.Status != "completed" && it.Status != "" {
			continue
		}
		if st := d.items[i]; st == nil {
			d.items[i] = &itemState{added: it, done: &it}
		} else if st.done == nil && it.Type == st.added.Type {
			st.done = &it
		}
	}
	msg := model.Message{Role: model.Assistant}
	calls := 0
	for _, i := range slices.Sorted(maps.Keys(d.items)) {
		st := d.items[i]
		switch st.added.Type {
		case "reasoning":
			if p, ok := st.thinkingPart(); ok {
				msg.Parts = append(msg.Parts, p)
			}
		case "message":
			if t := st.messageText(); t != "" {
				msg.Parts = append(msg.Parts, model.TextPart(t))
			}
		case "function_call":
			// A call cut off by the output cap never reaches done; its arguments are partial.
			if st.done == nil {
				continue
			}
			in, ok := callInput(st.done.Arguments)
			if !ok && resp.Status == "incomplete" {
				continue
			}
			calls++
			msg.Parts = append(msg.Parts, model.Part{Kind: model.KindToolCall, ToolCall: &model.ToolCall{
				ID: st.done.CallID, Name: st.done.Name, Input: in, ItemID: st.done.ID,
			}})
		}
	}
	stop := model.StopEnd
	switch {
	case resp.Status == "incomplete" || resp.IncompleteDetails != nil:
		stop = model.StopOther
		if resp.IncompleteDetails != nil {
			switch resp.IncompleteDetails.Reason {
			case "max_output_tokens":
				stop = model.StopMaxTokens
			case "content_filter":
				stop = model.StopRefusal
			}
		}
	case calls > 0:
		stop = model.StopToolUse
	}
	var usage model.Usage
	if u := resp.Usage; u != nil {
		usage = model.Usage{
			Input:      u.InputTokens,
			Output:     u.OutputTokens,
			CacheRead:  u.InputTokensDetails.CachedTokens,
			CacheWrite: u.InputTokensDetails.CacheWriteTokens,
			Reasoning:  u.OutputTokensDetails.ReasoningTokens,
		}
	}
	d.emit(model.Done{Message: msg, Stop: stop, Usage: usage})
	return nil
}

// thinkingPart returns the reasoning item as a thinking part. Only a completed item keeps
// its encrypted content: the copy in output_item.added is partial and would not decrypt.
func (st *itemState) thinkingPart() (model.Part, bool) {
	th := &model.Thinking{Protocol: name, ID: st.added.ID}
	if it := st.done; it != nil {
		th.ID, th.Encrypted = it.ID, it.EncryptedContent
		for _, s := range it.Summary {
			th.Summary = append(th.Summary, s.Text)
		}
		th.Text = strings.Join(th.Summary, "\n\n")
		if th.Text == "" {
			var raw []string
			for _, c := range it.Content {
				raw = append(raw, c.Text)
			}
			th.Text = strings.Join(raw, "\n\n")
		}
	}
	if th.Text == "" && st.thinking != nil {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(st.thinking)) {
			parts = append(parts, st.thinking[k].String())
		}
		th.Text = strings.Join(parts, "\n\n")
	}
	if th.Text == "" && th.Encrypted == "" {
		return model.Part{}, false
	}
	return model.Part{Kind: model.KindThinking, Thinking: th}, true
}

// messageText returns the text of a message item, from its done copy when there is one.
func (st *itemState) messageText() string {
	if st.done == nil {
		return st.text.String()
	}
	var b strings.Builder
	for _, c := range st.done.Content {
		switch c.Type {
		case "output_text":
			b.WriteString(c.Text)
		case "refusal":
			b.WriteString(c.Refusal)
		}
	}
	return b.String()
}

// callInput returns args as JSON. Empty arguments mean no arguments. Arguments that are
// not JSON are kept as a JSON string, so the call can still be answered (the tool will
// reject the input) and replayed as sent; ok reports whether they parsed.
func callInput(args string) (json.RawMessage, bool) {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}"), true
	}
	if json.Valid([]byte(args)) {
		return json.RawMessage(args), true
	}
	b, _ := json.Marshal(args)
	return b, false
}
