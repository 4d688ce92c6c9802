package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	"myco.dev/agent/model"
)

// request is the body of POST /responses.
type request struct {
	Model             string     `json:"model"`
	Stream            bool       `json:"stream"`
	Store             bool       `json:"store"`
	Instructions      string     `json:"instructions,omitempty"`
	Input             []any      `json:"input"`
	Tools             []tool     `json:"tools,omitempty"`
	ToolChoice        string     `json:"tool_choice,omitempty"`
	ParallelToolCalls bool       `json:"parallel_tool_calls,omitempty"`
	MaxOutputTokens   int        `json:"max_output_tokens,omitempty"`
	Include           []string   `json:"include,omitempty"`
	Reasoning         *reasoning `json:"reasoning,omitempty"`
	PromptCacheKey    string     `json:"prompt_cache_key,omitempty"`
}

type reasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary"`
}

// tool is the flat function-tool shape (name and parameters at top level).
type tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// The input item shapes. Each is marshaled on its own, so fields the API requires (such as
// a reasoning item's summary) are present even when empty.
type (
	messageItem struct {
		Type    string        `json:"type"` // "message"
		Role    model.Role    `json:"role"`
		Content []contentPart `json:"content"`
	}
	contentPart struct {
		Type     string `json:"type"` // input_text, input_image, output_text
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"image_url,omitempty"`
	}
	reasoningItem struct {
		Type             string        `json:"type"` // "reasoning"
		ID               string        `json:"id"`
		Summary          []summaryPart `json:"summary"`
		EncryptedContent string        `json:"encrypted_content"`
	}
	summaryPart struct {
		Type string `json:"type"` // "summary_text"
		Text string `json:"text"`
	}
	functionCallItem struct {
		Type      string `json:"type"` // "function_call"
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	functionCallOutputItem struct {
		Type   string `json:"type"` // "function_call_output"
		CallID string `json:"call_id"`
		Output any    `json:"output"` // a string, or []contentPart when there are images
	}
)

// emptySchema is sent for a tool declared without parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// unknownOutcome is the output of a tool call whose result was never observed.
const unknownOutcome = "The outcome of this tool call is unknown: it was interrupted before its result was observed, so it may or may not have taken effect."

func encode(req model.Request) ([]byte, error) {
	body := request{
		Model:           req.Model,
		Stream:          true,
		Instructions:    req.System,
		Input:           []any{},
		MaxOutputTokens: req.MaxOutputTokens,
		PromptCacheKey:  req.CacheKey,
	}
	for _, m := range req.Messages {
		items, err := messageItems(m)
		if err != nil {
			return nil, err
		}
		body.Input = append(body.Input, items...)
	}
	for _, t := range req.Tools {
		params := t.Schema
		if len(params) == 0 {
			params = emptySchema
		}
		body.Tools = append(body.Tools, tool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params})
	}
	if len(body.Tools) > 0 {
		body.ToolChoice = "auto"
		body.ParallelToolCalls = true
	}
	if req.Thinking != "none" {
		body.Reasoning = &reasoning{Effort: req.Effort, Summary: "auto"}
		body.Include = []string{"reasoning.encrypted_content"}
	}
	return json.Marshal(body)
}

// messageItems turns one neutral message into input items, in part order. Consecutive text,
// system and image parts share one message item; thinking, tool calls and tool results are
// items of their own.
func messageItems(m model.Message) ([]any, error) {
	var items []any
	var content []contentPart
	flush := func() {
		if len(content) > 0 {
			items = append(items, messageItem{Type: "message", Role: m.Role, Content: content})
			content = nil
		}
	}
	textType := "input_text"
	if m.Role == model.Assistant {
		textType = "output_text"
	}
	for i, p := range m.Parts {
		switch p.Kind {
		case model.KindText, model.KindSystem:
			// System parts reach the model as ordinary text of the message they belong to.
			if p.Text != "" {
				content = append(content, contentPart{Type: textType, Text: p.Text})
			}
		case model.KindImage:
			if p.Image != nil && m.Role != model.Assistant {
				content = append(content, imagePart(*p.Image))
			}
		case model.KindThinking:
			if !replayable(p.Thinking) || !followed(m.Parts[i+1:]) {
				continue
			}
			flush()
			items = append(items, reasoningOf(p.Thinking))
		case model.KindToolCall:
			if p.ToolCall == nil {
				continue
			}
			flush()
			items = append(items, functionCallItem{
				Type:      "function_call",
				CallID:    p.ToolCall.ID,
				Name:      p.ToolCall.Name,
				Arguments: arguments(p.ToolCall.Input),
			})
		case model.KindToolResult:
			if p.ToolResult == nil {
				continue
			}
			flush()
			items = append(items, outputOf(p.ToolResult))
		default:
			return nil, fmt.Errorf("encode message part: unknown kind %q", p.Kind)
		}
	}
	flush()
	return items, nil
}

// replayable reports whether a thinking part can be sent back: it must come from this
// protocol and carry its encrypted content, because under store:false the API cannot look a
// reasoning item up by id (it answers 404).
func replayable(t *model.Thinking) bool {
	return t != nil && t.Protocol == name && t.Encrypted != "" && t.ID != ""
}

// followed reports whether rest holds an item a reasoning item can precede. A reasoning
// item sent without its following item is rejected, so reasoning that ended a message (a
// response cut off while thinking) is not replayed.
func followed(rest []model.Part) bool {
	for _, p := range rest {
		switch p.Kind {
		case model.KindText, model.KindSystem:
			if p.Text != "" {
				return true
			}
		case model.KindToolCall:
			if p.ToolCall != nil {
				return true
			}
		}
	}
	return false
}

func reasoningOf(t *model.Thinking) reasoningItem {
	it := reasoningItem{Type: "reasoning", ID: t.ID, Summary: []summaryPart{}, EncryptedContent: t.Encrypted}
	summary := t.Summary
	if len(summary) == 0 && t.Text != "" {
		summary = []string{t.Text}
	}
	for _, s := range summary {
		it.Summary = append(it.Summary, summaryPart{Type: "summary_text", Text: s})
	}
	return it
}

// arguments returns a call's input as the arguments string. Input that was not JSON when it
// arrived is held as a JSON string and is sent back as the original text.
func arguments(in json.RawMessage) string {
	if len(in) == 0 {
		return "{}"
	}
	if in[0] == '"' {
		var s string
		if json.Unmarshal(in, &s) == nil {
			return s
		}
	}
	return string(in)
}

func outputOf(r *model.ToolResult) functionCallOutputItem {
	text := r.Text
	if r.Unknown {
		text = strings.TrimSpace(unknownOutcome + "\n" + r.Text)
	}
	it := functionCallOutputItem{Type: "function_call_output", CallID: r.CallID, Output: text}
	if len(r.Images) > 0 {
		var parts []contentPart
		if text != "" {
			parts = append(parts, contentPart{Type: "input_text", Text: text})
		}
		for _, img := range r.Images {
			parts = append(parts, imagePart(img))
		}
		it.Output = parts
	}
	return it
}

func imagePart(img model.Image) contentPart {
	return contentPart{Type: "input_image", ImageURL: "data:" + img.MediaType + ";base64," + img.Data}
}
