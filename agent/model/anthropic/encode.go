package anthropic

import (
	"encoding/json"
	"fmt"

	"myco.dev/agent/model"
)

// DefaultMaxTokens is the max_tokens sent when the request sets no output cap; the API
// requires the field.
const DefaultMaxTokens = 8192

// minBudget is the smallest budget_tokens the API accepts for manual thinking.
const minBudget = 1024

// unknownOutcome is what the model reads for a tool call whose outcome was never observed.
const unknownOutcome = "The outcome of this tool call is unknown: it was interrupted before its result was recorded, so it may or may not have taken effect. Check before repeating it."

// noOutput stands in for the empty content of a failed tool call; the API rejects an
// is_error result without content.
const noOutput = "(no output)"

type request struct {
	Model        string        `json:"model"`
	MaxTokens    int           `json:"max_tokens"`
	Stream       bool          `json:"stream"`
	System       []block       `json:"system,omitempty"`
	Messages     []message     `json:"messages"`
	Tools        []tool        `json:"tools,omitempty"`
	ToolChoice   *toolChoice   `json:"tool_choice,omitempty"`
	Thinking     *thinking     `json:"thinking,omitempty"`
	OutputConfig *outputConfig `json:"output_config,omitempty"`
}

type message struct {
	Role    model.Role `json:"role"`
	Content []block    `json:"content"`
}

// block is any content block; Type says which fields are set. Thinking and Signature are
// pointers because a thinking block carries both even when they are empty.
type block struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	Source       *imageSource    `json:"source,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	IsError      *bool           `json:"is_error,omitempty"`
	Content      []block         `json:"content,omitempty"`
	Thinking     *string         `json:"thinking,omitempty"`
	Signature    *string         `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
	// volatile marks a block that only this request carries (the context-use note): a
	// cache breakpoint on it would cache a prefix the next request does not repeat.
	volatile bool
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type cacheControl struct {
	Type string `json:"type"`
}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type toolChoice struct {
	Type string `json:"type"`
}

type thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

type outputConfig struct {
	Effort string `json:"effort,omitempty"`
}

var ephemeral = &cacheControl{Type: "ephemeral"}

// Encode serializes req as a streaming /v1/messages body.
//
// Thinking "adaptive" or "" sends {"type":"adaptive"}; "none" sends no thinking field at
// all (adaptive-only models reject "disabled"); "budget" sends {"type":"enabled"} with
// budget_tokens = max(1024, max_tokens/2), which is always below max_tokens, and omits
// thinking when max_tokens is 1024 or less since no valid budget exists.
//
// Messages are rewritten to what the API accepts: empty text is never sent, an assistant
// message left without blocks is skipped, consecutive messages of one role are merged (tool
// results first in a user message, thinking first in an assistant message), and thinking
// produced by another protocol is dropped. Two cache breakpoints are set: the system block
// and the last cacheable block of the last message.
func (Protocol) Encode(req model.Request) ([]byte, error) {
	out := request{
		Model:     req.Model,
		MaxTokens: req.MaxOutputTokens,
		Stream:    true,
	}
	if out.MaxTokens <= 0 {
		out.MaxTokens = DefaultMaxTokens
	}
	if req.System != "" {
		out.System = []block{{Type: "text", Text: req.System, CacheControl: ephemeral}}
	}
	switch req.Thinking {
	case "", "adaptive":
		out.Thinking = &thinking{Type: "adaptive"}
	case "budget":
		if out.MaxTokens > minBudget {
			out.Thinking = &thinking{Type: "enabled", BudgetTokens: max(minBudget, out.MaxTokens/2)}
		}
	case "none":
	default:
		return nil, fmt.Errorf("anthropic: unknown thinking mode %q (want adaptive, budget or none)", req.Thinking)
	}
	if req.Effort != "" {
		out.OutputConfig = &outputConfig{Effort: req.Effort}
	}
	for _, t := range req.Tools {
		schema := t.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out.Tools = append(out.Tools, tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	if len(out.Tools) > 0 {
		out.ToolChoice = &toolChoice{Type: "auto"}
	}
	out.Messages = messages(req.Messages)
	if n := len(out.Messages); n > 0 {
		markLast(out.Messages[n-1].Content)
	}
	if out.Messages == nil {
		out.Messages = []message{}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("anthropic: marshal request: %w", err)
	}
	return b, nil
}

// messages converts the history, skipping messages with nothing to send and merging
// consecutive messages of the same role.
func messages(in []model.Message) []message {
	var out []message
	for _, m := range in {
		content := blocks(m)
		if len(content) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content = order(m.Role, append(out[n-1].Content, content...))
			continue
		}
		out = append(out, message{Role: m.Role, Content: content})
	}
	return out
}

// blocks converts the parts of one message. Reasoning comes first in an assistant message
// and tool results first in a user message, each group in its original order.
func blocks(m model.Message) []block {
	var lead, rest []block
	for _, p := range m.Parts {
		switch p.Kind {
		case model.KindText, model.KindSystem:
			if p.Text != "" {
				rest = append(rest, block{Type: "text", Text: p.Text, volatile: p.Kind == model.KindSystem && p.System == model.SystemContext})
			}
		case model.KindImage:
			if p.Image != nil && m.Role == model.User {
				rest = append(rest, imageBlock(*p.Image))
			}
		case model.KindThinking:
			if b, ok := thinkingBlock(p.Thinking); ok && m.Role == model.Assistant {
				lead = append(lead, b)
			}
		case model.KindToolCall:
			if p.ToolCall != nil && m.Role == model.Assistant {
				rest = append(rest, toolUse(*p.ToolCall))
			}
		case model.KindToolResult:
			if p.ToolResult != nil && m.Role == model.User {
				lead = append(lead, toolResult(*p.ToolResult))
			}
		}
	}
	return append(lead, rest...)
}

// order restores the leading group after a merge: tool results (user) or reasoning
// (assistant) first, everything else after, both in their original order.
func order(role model.Role, bs []block) []block {
	leads := func(b block) bool {
		if role == model.User {
			return b.Type == "tool_result"
		}
		return b.Type == "thinking" || b.Type == "redacted_thinking"
	}
	out := make([]block, 0, len(bs))
	for _, b := range bs {
		if leads(b) {
			out = append(out, b)
		}
	}
	for _, b := range bs {
		if !leads(b) {
			out = append(out, b)
		}
	}
	return out
}

// thinkingBlock replays reasoning this protocol produced, exactly as it arrived.
func thinkingBlock(t *model.Thinking) (block, bool) {
	switch {
	case t == nil || t.Protocol != Name:
		return block{}, false
	case t.Redacted != "":
		return block{Type: "redacted_thinking", Data: t.Redacted}, true
	case t.Signature != "":
		text, sig := t.Text, t.Signature
		return block{Type: "thinking", Thinking: &text, Signature: &sig}, true
	}
	// Unsigned thinking (cut off before its signature) would be rejected.
	return block{}, false
}

func imageBlock(im model.Image) block {
	return block{Type: "image", Source: &imageSource{Type: "base64", MediaType: im.MediaType, Data: im.Data}}
}

func toolUse(c model.ToolCall) block {
	input := c.Input
	if len(input) == 0 || !json.Valid(input) {
		input = json.RawMessage(`{}`)
	}
	return block{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input}
}

func toolResult(r model.ToolResult) block {
	isErr := r.IsError || r.Unknown
	var content []block
	if r.Unknown {
		content = append(content, block{Type: "text", Text: unknownOutcome})
	}
	if r.Text != "" {
		content = append(content, block{Type: "text", Text: r.Text})
	}
	for _, im := range r.Images {
		content = append(content, imageBlock(im))
	}
	if len(content) == 0 && isErr {
		content = append(content, block{Type: "text", Text: noOutput})
	}
	return block{Type: "tool_result", ToolUseID: r.CallID, IsError: &isErr, Content: content}
}

// markLast sets the message-side cache breakpoint on the last block that may carry one
// (thinking blocks may not) and that the next request repeats (not a volatile note).
func markLast(bs []block) {
	for i := len(bs) - 1; i >= 0; i-- {
		if bs[i].Type != "thinking" && bs[i].Type != "redacted_thinking" && !bs[i].volatile {
			bs[i].CacheControl = ephemeral
			return
		}
	}
}
