package fakemodel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// anthSignature is the signature this fake issues for a thinking block's text. A replayed
// block whose signature differs was altered or was not issued here.
func anthSignature(thinking string) string {
	h := sha256.Sum256([]byte("fakemodel thinking\x00" + thinking))
	return "sig-" + hex.EncodeToString(h[:16])
}

type anthRequest struct {
	Model     string          `json:"model"`
	MaxTokens *int            `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []anthMessage   `json:"messages"`
	Tools     []struct {
		Name         string          `json:"name"`
		CacheControl json.RawMessage `json:"cache_control"`
	} `json:"tools"`
	Thinking *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
}

type anthMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthBlock struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	Thinking     *string         `json:"thinking"`
	Signature    string          `json:"signature"`
	Data         string          `json:"data"`
	CacheControl json.RawMessage `json:"cache_control"`
	Source       *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

// anthBlocks decodes content that is either a string (one text block) or a block list.
func anthBlocks(raw json.RawMessage) ([]anthBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []anthBlock{{Type: "text", Text: &s}}, nil
	}
	var bs []anthBlock
	err := json.Unmarshal(raw, &bs)
	return bs, err
}

// anthValidate checks req the way the Messages API does and returns the text of the last
// tool result, or the message of the 400 the API would answer with.
func anthValidate(req *anthRequest) (lastToolResult string, problem string) {
	if req.MaxTokens == nil {
		return "", "max_tokens: Field required"
	}
	if *req.MaxTokens < 1 {
		return "", "max_tokens: Input should be greater than or equal to 1"
	}
	if th := req.Thinking; th != nil {
		switch th.Type {
		case "adaptive", "disabled":
		case "enabled":
			if th.BudgetTokens < 1024 {
				return "", "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
			}
			if *req.MaxTokens <= th.BudgetTokens {
				return "", "`max_tokens` must be greater than `thinking.budget_tokens`"
			}
		default:
			return "", fmt.Sprintf("thinking: Input tag '%s' found using 'type' does not match any of the expected tags: 'adaptive', 'disabled', 'enabled'", th.Type)
		}
	}
	breakpoints := 0
	for _, t := range req.Tools {
		if len(t.CacheControl) > 0 {
			breakpoints++
		}
	}
	if len(req.System) > 0 && req.System[0] == '[' {
		system, err := anthBlocks(req.System)
		if err != nil {
			return "", "system: Input should be a valid list"
		}
		for i, b := range system {
			if b.Type != "text" || b.Text == nil || *b.Text == "" {
				return "", fmt.Sprintf("system.%d: text content blocks must be non-empty", i)
			}
			if len(b.CacheControl) > 0 {
				breakpoints++
			}
		}
	}
	if len(req.Messages) == 0 {
		return "", "messages: at least one message is required"
	}
	var prevUses []string // tool_use ids of the previous assistant message
	allUses := map[string]bool{}
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return "", fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if i == 0 && m.Role != "user" {
			return "", `messages: first message must use the "user" role`
		}
		if i > 0 && req.Messages[i-1].Role == m.Role {
			return "", fmt.Sprintf(`messages: roles must alternate between "user" and "assistant", but found multiple %q roles in a row`, m.Role)
		}
		bs, err := anthBlocks(m.Content)
		if err != nil {
			return "", fmt.Sprintf("messages.%d.content: Input should be a valid list", i)
		}
		if len(bs) == 0 && !(m.Role == "assistant" && i == len(req.Messages)-1) {
			return "", fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		var uses []string
		results := map[string]bool{}
		seenOther := false
		for j, b := range bs {
			at := fmt.Sprintf("messages.%d.content.%d", i, j)
			if len(b.CacheControl) > 0 {
				breakpoints++
			}
			if !anthAllowed(m.Role, b.Type) {
				return "", fmt.Sprintf("%s: %s blocks are not allowed in %s messages", at, b.Type, m.Role)
			}
			switch b.Type {
			case "text":
				if b.Text == nil || *b.Text == "" {
					return "", at + ".text: text content blocks must be non-empty"
				}
			case "image":
				if b.Source == nil || (b.Source.Type == "base64" && b.Source.Data == "") {
					return "", at + ".source: image source must have data"
				}
			case "thinking":
				if b.Thinking == nil || b.Signature != anthSignature(*b.Thinking) {
					return "", at + ": Invalid `signature` in `thinking` block"
				}
			case "redacted_thinking":
				if b.Data == "" {
					return "", at + ".data: redacted_thinking data must be non-empty"
				}
			case "tool_use":
				if b.ID == "" || b.Name == "" {
					return "", at + ": tool_use blocks need an id and a name"
				}
				if len(b.Input) == 0 || b.Input[0] != '{' {
					return "", at + ".input: Input should be a valid dictionary"
				}
				if !anthIDPattern(b.ID) {
					return "", at + ".id: String should match pattern '^[a-zA-Z0-9_-]+$'"
				}
				if allUses[b.ID] {
					return "", at + ": `tool_use` ids must be unique"
				}
				allUses[b.ID] = true
				uses = append(uses, b.ID)
			case "tool_result":
				if seenOther {
					return "", at + ": tool_result blocks must come first in the user message, before any other content"
				}
				if !slices.Contains(prevUses, b.ToolUseID) {
					return "", fmt.Sprintf("%s: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", at, b.ToolUseID)
				}
				if results[b.ToolUseID] {
					return "", fmt.Sprintf("%s: each tool_use id may be answered by only one tool_result; %s is answered twice", at, b.ToolUseID)
				}
				results[b.ToolUseID] = true
				text, problem := anthResultText(b.Content, at)
				if problem != "" {
					return "", problem
				}
				lastToolResult = text
			}
			if b.Type != "tool_result" {
				seenOther = true
			}
		}
		if m.Role == "user" {
			var missing []string
			for _, id := range prevUses {
				if !results[id] {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				return "", fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", "))
			}
		}
		prevUses = uses
		if m.Role == "user" {
			prevUses = nil
		}
	}
	if len(prevUses) > 0 {
		return "", fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(req.Messages)-1, strings.Join(prevUses, ", "))
	}
	if breakpoints > 4 {
		return "", fmt.Sprintf("A maximum of 4 blocks with cache_control may be provided. Found %d.", breakpoints)
	}
	return lastToolResult, ""
}

// anthIDPattern reports whether id matches the API's tool_use id pattern ^[a-zA-Z0-9_-]+$.
func anthIDPattern(id string) bool {
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return id != ""
}

func anthAllowed(role, typ string) bool {
	switch typ {
	case "text":
		return true
	case "image", "tool_result", "document":
		return role == "user"
	case "thinking", "redacted_thinking", "tool_use":
		return role == "assistant"
	}
	return false
}

// anthResultText checks a tool_result's content and returns its text.
func anthResultText(raw json.RawMessage, at string) (text, problem string) {
	bs, err := anthBlocks(raw)
	if err != nil {
		return "", at + ".content: Input should be a valid string or list"
	}
	var parts []string
	for k, b := range bs {
		switch b.Type {
		case "text":
			if b.Text == nil || *b.Text == "" {
				return "", fmt.Sprintf("%s.content.%d.text: text content blocks must be non-empty", at, k)
			}
			parts = append(parts, *b.Text)
		case "image", "document", "search_result":
		default:
			return "", fmt.Sprintf("%s.content.%d: %s blocks are not allowed in tool_result content", at, k, b.Type)
		}
	}
	return strings.Join(parts, "\n"), ""
}

// anthOut is one content block to stream: its start shell, its deltas, and whether its
// content_block_stop is sent.
type anthOut struct {
	shell  map[string]any
	deltas []map[string]any
	stop   bool
}

// anthContent lays out t's content blocks. When the turn stops at max_tokens, the last
// block is cut mid-way: text and thinking lose their second half (and thinking its
// signature), and a tool call loses the end of its JSON and its content_block_stop.
func anthContent(t Turn, text string) []anthOut {
	var out []anthOut
	if t.Thinking != "" {
		b := anthOut{shell: map[string]any{"type": "thinking", "thinking": "", "signature": ""}, stop: true}
		for _, c := range chunks(t.Thinking, t.ChunkSize) {
			b.deltas = append(b.deltas, map[string]any{"type": "thinking_delta", "thinking": c})
		}
		b.deltas = append(b.deltas, map[string]any{"type": "signature_delta", "signature": anthSignature(t.Thinking)})
		out = append(out, b)
	}
	if t.RedactedThinking != "" {
		out = append(out, anthOut{shell: map[string]any{"type": "redacted_thinking", "data": t.RedactedThinking}, stop: true})
	}
	if text != "" {
		b := anthOut{shell: map[string]any{"type": "text", "text": ""}, stop: true}
		for _, c := range chunks(text, t.ChunkSize) {
			b.deltas = append(b.deltas, map[string]any{"type": "text_delta", "text": c})
		}
		out = append(out, b)
	}
	for i, c := range t.ToolCalls {
		b := anthOut{shell: map[string]any{"type": "tool_use", "id": callID(c, "toolu_fake_", i), "name": c.Name, "input": map[string]any{}}, stop: true}
		b.deltas = append(b.deltas, map[string]any{"type": "input_json_delta", "partial_json": ""})
		for _, a := range chunks(c.Args, t.ChunkSize) {
			b.deltas = append(b.deltas, map[string]any{"type": "input_json_delta", "partial_json": a})
		}
		out = append(out, b)
	}
	if t.Stop == "max_tokens" && len(out) > 0 {
		last := &out[len(out)-1]
		switch last.shell["type"] {
		case "thinking":
			n := len(last.deltas) - 1 // without the signature
			last.deltas = last.deltas[:max(1, n/2)]
		case "text":
			last.deltas = last.deltas[:max(1, len(last.deltas)/2)]
		case "tool_use":
			last.deltas = last.deltas[:max(1, len(last.deltas)/2)]
			last.stop = false
		}
	}
	return out
}

// anthStop is the stop_reason for t.
func anthStop(t Turn) string {
	switch t.Stop {
	case "":
		if len(t.ToolCalls) > 0 {
			return "tool_use"
		}
		return "end_turn"
	case "pause":
		return "pause_turn"
	}
	return t.Stop // max_tokens, refusal, or any other value verbatim
}

// serveAnthropic validates an anthropic-messages request and renders t as its stream.
func serveAnthropic(ctx context.Context, w http.ResponseWriter, body []byte, t Turn) {
	var req anthRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "There was an error parsing the body of your request: "+err.Error(), Turn{})
		return
	}
	lastResult, problem := anthValidate(&req)
	if problem != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", problem, Turn{})
		return
	}

	s := newStream(ctx, w, t)
	startUsage := map[string]any{
		"input_tokens":                t.Usage.Input,
		"cache_creation_input_tokens": t.Usage.CacheWrite,
		"cache_read_input_tokens":     t.Usage.CacheRead,
		"output_tokens":               1,
	}
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "content": []any{}, "model": req.Model,
		"stop_reason": nil, "stop_sequence": nil, "usage": startUsage,
	}})
	s.event("ping", map[string]any{"type": "ping"})
	s.comment("keep-alive")

	for i, b := range anthContent(t, answerText(t, lastResult)) {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": b.shell})
		for _, d := range b.deltas {
			s.pause()
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		if b.stop {
			s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		}
	}

	if t.MidStreamError != "" {
		msg := "fakemodel: scripted mid-stream error"
		if t.MidStreamError == "overloaded_error" {
			msg = "Overloaded"
		}
		s.event("error", map[string]any{"type": "error", "error": map[string]any{"type": t.MidStreamError, "message": msg}})
		return
	}
	if t.Drop || t.Stall {
		s.cut()
		return
	}
	final := map[string]any{
		"input_tokens":                t.Usage.Input,
		"cache_creation_input_tokens": t.Usage.CacheWrite,
		"cache_read_input_tokens":     t.Usage.CacheRead,
		"output_tokens":               t.Usage.Output,
	}
	if t.Usage.Reasoning > 0 {
		final["output_tokens_details"] = map[string]any{"thinking_tokens": t.Usage.Reasoning}
	}
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": anthStop(t), "stop_sequence": nil}, "usage": final})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}
