package fakemodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// chatRequest is the part of a Chat Completions request the fake checks and uses.
type chatRequest struct {
	Model         string          `json:"model"`
	MaxTokens     json.RawMessage `json:"max_tokens"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []chatMessage `json:"messages"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID string `json:"id"`
	} `json:"tool_calls"`
}

// chatPart is one element of a content parts list.
type chatPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// serveCompletions checks body the way OpenAI does and renders t as a Chat Completions
// stream: data-only chunks ending with "data: [DONE]".
func serveCompletions(ctx context.Context, w http.ResponseWriter, body []byte, t Turn) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "We could not parse the JSON body of your request: "+err.Error(), Turn{})
		return
	}
	lastResult, err := chatValidate(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error(), Turn{})
		return
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	cs := &chatStream{s: newStream(ctx, w, t), model: req.Model, created: time.Now().Unix(), usage: includeUsage}
	cs.render(t, answerText(t, lastResult))
}

// chatValidate enforces the message rules OpenAI enforces and returns the text of the last
// tool message.
func chatValidate(req chatRequest) (lastResult string, err error) {
	if len(req.MaxTokens) > 0 && string(req.MaxTokens) != "null" {
		return "", errors.New("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.")
	}
	if len(req.Messages) == 0 {
		return "", errors.New("Invalid 'messages': empty array. Expected an array with minimum length 1.")
	}
	var pending []string // ids of the latest tool_calls not yet answered
	seen := map[string]bool{}
	for i, m := range req.Messages {
		if m.Role != "tool" && len(pending) > 0 {
			return "", fmt.Errorf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s (messages[%d] has role %q)", strings.Join(pending, ", "), i, m.Role)
		}
		switch m.Role {
		case "system", "developer", "user":
			if err := chatCheckContent(m.Content, m.Role == "user"); err != nil {
				return "", fmt.Errorf("Invalid 'messages[%d].content': %w", i, err)
			}
		case "assistant":
			for _, c := range m.ToolCalls {
				if c.ID == "" {
					return "", fmt.Errorf("Missing required parameter: 'messages[%d].tool_calls[].id'.", i)
				}
				if seen[c.ID] {
					return "", fmt.Errorf("Invalid 'messages[%d].tool_calls': duplicate tool call id %s; every tool call needs its own id.", i, c.ID)
				}
				seen[c.ID] = true
				pending = append(pending, c.ID)
			}
		case "tool":
			j := chatIndex(pending, m.ToolCallID)
			if j < 0 {
				return "", fmt.Errorf("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages[%d].tool_call_id %q)", i, m.ToolCallID)
			}
			pending = append(pending[:j], pending[j+1:]...)
			text, err := chatToolText(m.Content)
			if err != nil {
				return "", fmt.Errorf("Invalid 'messages[%d].content': %w", i, err)
			}
			lastResult = text
		default:
			return "", fmt.Errorf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'tool', and 'developer'. (messages[%d].role)", m.Role, i)
		}
	}
	if len(pending) > 0 {
		return "", fmt.Errorf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(pending, ", "))
	}
	return lastResult, nil
}

func chatIndex(ids []string, id string) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// chatCheckContent accepts a string or a parts list; images only where allowed.
func chatCheckContent(raw json.RawMessage, images bool) error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return nil
	}
	var parts []struct {
		Type     string `json:"type"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return errors.New("expected a string or an array of content parts")
	}
	for _, p := range parts {
		switch {
		case p.Type == "text":
		case p.Type == "image_url" && images:
			if p.ImageURL == nil || !strings.HasPrefix(p.ImageURL.URL, "data:image/") || !strings.Contains(p.ImageURL.URL, ";base64,") {
				return errors.New("image_url must be a data:image/…;base64, URL")
			}
		default:
			return fmt.Errorf("content part type %q is not supported here", p.Type)
		}
	}
	return nil
}

// chatToolText returns the text of a tool message, which must be a string or text parts.
func chatToolText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []chatPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("a tool message's content must be a string or an array of text parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("a tool message's content parts must be of type 'text', got %q", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// chatStream writes chat.completion.chunk events.
type chatStream struct {
	s       *stream
	model   string
	created int64
	usage   bool // the request asked for usage (stream_options.include_usage)
}

type chatChunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []chatChoice    `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Delta        map[string]any `json:"delta"`
	Logprobs     *struct{}      `json:"logprobs"`
	FinishReason *string        `json:"finish_reason"`
}

// send writes one chunk. With usage requested, chunks without it carry "usage":null, as
// the SDK documents.
func (c *chatStream) send(choices []chatChoice, usage json.RawMessage) {
	if usage == nil && c.usage {
		usage = json.RawMessage("null")
	}
	if choices == nil {
		choices = []chatChoice{}
	}
	c.s.event("", chatChunk{
		ID: "chatcmpl-fake", Object: "chat.completion.chunk", Created: c.created, Model: c.model,
		SystemFingerprint: "fp_fake", Choices: choices, Usage: usage,
	})
}

func (c *chatStream) delta(d map[string]any) {
	c.send([]chatChoice{{Delta: d}}, nil)
}

func (c *chatStream) render(t Turn, text string) {
	c.delta(map[string]any{"role": "assistant", "content": ""})
	c.s.comment("keep-alive")
	field := t.ReasoningField
	if field == "" {
		field = "reasoning_content"
	}
	for _, p := range chunks(t.Thinking, t.ChunkSize) {
		c.s.pause()
		c.delta(map[string]any{field: p})
	}
	calls := t.ToolCalls
	cut := t.Stop == "max_tokens"
	if cut && len(calls) == 0 {
		text = chatHalf(text)
	}
	for _, p := range chunks(text, t.ChunkSize) {
		c.s.pause()
		c.delta(map[string]any{"content": p})
	}
	for i, tc := range calls {
		args := tc.Args
		if cut && i == len(calls)-1 {
			args = chatHalf(args)
		}
		id := callID(tc, "call_", i)
		c.s.pause()
		if t.WholeToolCalls {
			c.delta(chatCallDelta(i, map[string]any{"id": id, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": args}}))
			continue
		}
		c.delta(chatCallDelta(i, map[string]any{"id": id, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": ""}}))
		for _, p := range chunks(args, t.ChunkSize) {
			c.s.pause()
			c.delta(chatCallDelta(i, map[string]any{"function": map[string]any{"arguments": p}}))
		}
	}
	if t.MidStreamError != "" {
		c.s.event("", map[string]any{"error": map[string]any{"message": "fakemodel: scripted " + t.MidStreamError, "type": t.MidStreamError, "param": nil, "code": nil}})
		return
	}
	if t.Drop || t.Stall {
		c.s.cut()
		return
	}
	finish := "stop"
	switch {
	case cut:
		finish = "length"
	case t.Stop == "refusal":
		finish = "content_filter"
	case len(calls) > 0:
		finish = "tool_calls"
	}
	u, _ := json.Marshal(map[string]any{
		"prompt_tokens":             t.Usage.Input + t.Usage.CacheRead,
		"completion_tokens":         t.Usage.Output,
		"total_tokens":              t.Usage.Input + t.Usage.CacheRead + t.Usage.Output,
		"prompt_tokens_details":     map[string]any{"cached_tokens": t.Usage.CacheRead},
		"completion_tokens_details": map[string]any{"reasoning_tokens": t.Usage.Reasoning},
	})
	var finishUsage json.RawMessage
	if c.usage && t.UsageOnFinish {
		finishUsage = u
	}
	c.send([]chatChoice{{Delta: map[string]any{}, FinishReason: &finish}}, finishUsage)
	if c.usage && !t.UsageOnFinish {
		c.send(nil, u)
	}
	c.s.event("", "[DONE]")
}

func chatCallDelta(i int, fields map[string]any) map[string]any {
	fields["index"] = i
	return map[string]any{"tool_calls": []any{fields}}
}

// chatHalf cuts s to about half, on a rune boundary, as the output cap would.
func chatHalf(s string) string {
	i := len(s) / 2
	for i < len(s) && !utf8Start(s[i]) {
		i++
	}
	return s[:i]
}
