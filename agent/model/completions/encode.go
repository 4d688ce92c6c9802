package completions

import (
	"encoding/json"
	"fmt"
	"strings"

	"myco.dev/agent/model"
)

// The request body. Field order follows the SDK's CompletionCreateParams so recorded
// bodies read naturally.
type request struct {
	Model               string        `json:"model"`
	Stream              bool          `json:"stream"`
	StreamOptions       streamOptions `json:"stream_options"`
	MaxCompletionTokens int           `json:"max_completion_tokens,omitempty"`
	Messages            []message     `json:"messages"`
	Tools               []tool        `json:"tools,omitempty"`
	ToolChoice          string        `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool         `json:"parallel_tool_calls,omitempty"`
	ReasoningEffort     string        `json:"reasoning_effort,omitempty"`
	PromptCacheKey      string        `json:"prompt_cache_key,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// message is one chat message. Content is a string, a []contentPart, or nil (JSON null,
// for an assistant message that only calls tools).
type message struct {
	Role       string     `json:"role"`
	Content    any        `json:"content"`
	Reasoning  string     `json:"reasoning_content,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type tool struct {
	Type     string      `json:"type"`
	Function functionDef `json:"function"`
}

type functionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptySchema stands in for a tool declared without a schema; servers require an object.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// Encode serializes req as a streaming Chat Completions request.
//
// Tool results become one "tool" message each, text only, since a tool message cannot
// carry images. Their images, and any text and system parts of the same neutral message,
// follow in one user message after the whole batch: a user message between the tool
// messages would break the rule that tool_calls are answered by the messages right after.
//
// An assistant turn that made tool calls carries its openai-completions thinking back as
// reasoning_content, which DeepSeek's thinking mode requires. It is sent only when there is
// such thinking: turns without tool calls don't need it (DeepSeek ignores it there and older
// deepseek-reasoner rejected it), and strict servers such as Groq reject unknown message
// fields, so an empty one is never sent.
func (Protocol) Encode(req model.Request) ([]byte, error) {
	body := request{
		Model:               req.Model,
		Stream:              true,
		StreamOptions:       streamOptions{IncludeUsage: true},
		MaxCompletionTokens: req.MaxOutputTokens,
		PromptCacheKey:      req.CacheKey,
	}
	if req.System != "" {
		body.Messages = append(body.Messages, message{Role: "system", Content: req.System})
	}
	names := map[string]string{} // tool call id -> name, for labelling result images
	for i, m := range req.Messages {
		msgs, err := encodeMessage(m, names)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		body.Messages = append(body.Messages, msgs...)
	}
	for _, t := range req.Tools {
		params := t.Schema
		if len(params) == 0 {
			params = emptySchema
		}
		body.Tools = append(body.Tools, tool{Type: "function", Function: functionDef{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	if len(body.Tools) > 0 {
		parallel := true
		body.ToolChoice, body.ParallelToolCalls = "auto", &parallel
	}
	// Chat Completions has no "default" effort value: leaving the field out is the default.
	if (req.Thinking == "effort" || req.Thinking == "") && req.Effort != "" {
		body.ReasoningEffort = req.Effort
	}
	return json.Marshal(body)
}

// encodeMessage translates one neutral message into zero or more chat messages.
func encodeMessage(m model.Message, names map[string]string) ([]message, error) {
	switch m.Role {
	case model.Assistant:
		msg, ok := encodeAssistant(m, names)
		if !ok {
			return nil, nil
		}
		return []message{msg}, nil
	case model.User:
		return encodeUser(m, names), nil
	}
	return nil, fmt.Errorf("unknown role %q", m.Role)
}

func encodeAssistant(m model.Message, names map[string]string) (message, bool) {
	var text, thinking strings.Builder
	msg := message{Role: "assistant"}
	for _, p := range m.Parts {
		switch p.Kind {
		case model.KindText, model.KindSystem:
			text.WriteString(p.Text)
		case model.KindThinking:
			if p.Thinking != nil && p.Thinking.Protocol == Name {
				thinking.WriteString(p.Thinking.Text)
			}
		case model.KindToolCall:
			if p.ToolCall == nil {
				continue
			}
			c := p.ToolCall
			names[c.ID] = c.Name
			args := string(c.Input)
			if strings.TrimSpace(args) == "" || args == "null" {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, toolCall{ID: c.ID, Type: "function", Function: functionCall{Name: c.Name, Arguments: args}})
		}
	}
	if text.Len() == 0 && len(msg.ToolCalls) == 0 {
		return message{}, false
	}
	if text.Len() > 0 {
		msg.Content = text.String()
	}
	if len(msg.ToolCalls) > 0 && thinking.Len() > 0 {
		msg.Reasoning = thinking.String()
	}
	return msg, true
}

// encodeUser returns the tool messages for m's tool results, then at most one user message
// with the images of those results and m's own text, images and system parts.
func encodeUser(m model.Message, names map[string]string) []message {
	var out []message
	var resultImages, own []contentPart
	for _, p := range m.Parts {
		switch p.Kind {
		case model.KindToolResult:
			if p.ToolResult == nil {
				continue
			}
			r := p.ToolResult
			out = append(out, message{Role: "tool", ToolCallID: r.CallID, Content: resultText(r)})
			if len(r.Images) > 0 {
				label := "Images from the result of tool call " + r.CallID
				if n := names[r.CallID]; n != "" {
					label += " (" + n + ")"
				}
				resultImages = append(resultImages, contentPart{Type: "text", Text: label + ":"})
				for _, img := range r.Images {
					resultImages = append(resultImages, imagePart(img))
				}
			}
		case model.KindText, model.KindSystem:
			if p.Text != "" {
				own = append(own, contentPart{Type: "text", Text: p.Text})
			}
		case model.KindImage:
			if p.Image != nil {
				own = append(own, imagePart(*p.Image))
			}
		}
	}
	if parts := append(resultImages, own...); len(parts) > 0 {
		out = append(out, message{Role: "user", Content: userContent(parts)})
	}
	return out
}

// userContent is a plain string when every part is text, which every server accepts, and
// a parts list otherwise.
func userContent(parts []contentPart) any {
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Type != "text" {
			return parts
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n\n")
}

func imagePart(img model.Image) contentPart {
	return contentPart{Type: "image_url", ImageURL: &imageURL{URL: "data:" + img.MediaType + ";base64," + img.Data}}
}

// resultText is the text of a tool message. The protocol has no error flag, so an error
// result relies on its text; an unknown outcome is spelled out, since the model must not
// assume the call either did or did not take effect.
func resultText(r *model.ToolResult) string {
	text := r.Text
	if r.Unknown {
		note := "The outcome of this tool call is unknown: its result was never observed, so it may or may not have taken effect."
		if text != "" {
			text = note + "\n\n" + text
		} else {
			text = note
		}
	}
	if text == "" {
		if len(r.Images) > 0 {
			return "(the result's images follow in the next user message)"
		}
		return "(no output)"
	}
	return text
}
