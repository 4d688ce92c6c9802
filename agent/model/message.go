package model

import "encoding/json"

// Role is who a message is from.
type Role string

const (
	User      Role = "user"
	Assistant Role = "assistant"
)

// Message is one turn of the conversation: a role and its ordered parts.
type Message struct {
	Role  Role   `json:"role"`
	Parts []Part `json:"parts"`
}

// PartKind names the variant a [Part] holds.
type PartKind string

const (
	KindText       PartKind = "text"
	KindThinking   PartKind = "thinking"
	KindToolCall   PartKind = "tool_call"
	KindToolResult PartKind = "tool_result"
	KindImage      PartKind = "image"
	// KindSystem is hidden system content: it reaches the model as text in the message it
	// belongs to, but transcripts, titles and acceptance times leave it out.
	KindSystem PartKind = "system"
)

// Part is one element of a message. Kind says which of the fields is set: Text for text and
// system parts, and exactly one of the pointers for the others.
type Part struct {
	Kind       PartKind    `json:"kind"`
	Text       string      `json:"text,omitempty"`
	System     string      `json:"system,omitempty"` // for KindSystem: what produced it, e.g. "runtime", "notice", "prelude"
	Thinking   *Thinking   `json:"thinking,omitempty"`
	ToolCall   *ToolCall   `json:"tool_call,omitempty"`
	ToolResult *ToolResult `json:"tool_result,omitempty"`
	Image      *Image      `json:"image,omitempty"`
	// Name is the file a text or image part was attached from, as the user named it: a
	// person sees a chip with this name rather than the file's whole text. The model sees
	// the part as it is.
	Name string `json:"name,omitempty"`
}

// Thinking is model reasoning, kept with whatever the provider needs to accept it back.
// Protocol names the wire protocol that produced it; reasoning is replayed only to that
// protocol, since signatures and encrypted payloads mean nothing elsewhere.
type Thinking struct {
	Protocol  string `json:"protocol"`
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"` // anthropic thinking block signature
	Redacted  string `json:"redacted,omitempty"`  // anthropic redacted_thinking data
	ID        string `json:"id,omitempty"`        // responses reasoning item id
	Encrypted string `json:"encrypted,omitempty"` // responses encrypted_content
	// Summary holds the responses reasoning summary parts as received; Text is their join.
	Summary []string `json:"summary,omitempty"`
}

// ToolCall is the model asking for a tool to run.
type ToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// ItemID is the responses function_call item id (fc_…), distinct from the call id.
	ItemID string `json:"item_id,omitempty"`
}

// ToolResult answers one [ToolCall] by its id.
type ToolResult struct {
	CallID  string  `json:"call_id"`
	Text    string  `json:"text"`
	Images  []Image `json:"images,omitempty"`
	IsError bool    `json:"is_error,omitempty"`
	// Unknown marks a call whose outcome was never observed (the process died, or the run
	// was cancelled while it ran): it may or may not have taken effect.
	Unknown bool `json:"unknown,omitempty"`
	// Stopped marks a call the user stopped while it ran (its outcome is Unknown too): a
	// person is shown that, and what it printed until then.
	Stopped bool `json:"stopped,omitempty"`
}

// Image is inline image data, base64-encoded.
type Image struct {
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Kind: KindText, Text: s} }

// SystemContext is the source of the per-request note that tells the agent its context
// use. The note is added to a copy of the request's last message and never stored, so
// protocols keep prompt-cache breakpoints off it: the cached prefix must be one the next
// request repeats.
const SystemContext = "context"

// SystemPart returns a hidden system part produced by source.
func SystemPart(source, s string) Part { return Part{Kind: KindSystem, System: source, Text: s} }

// Text returns the concatenated visible text parts of m.
func (m Message) Text() string {
	var s string
	for _, p := range m.Parts {
		if p.Kind == KindText {
			s += p.Text
		}
	}
	return s
}

// ToolCalls returns the tool calls of m, in order.
func (m Message) ToolCalls() []ToolCall {
	var calls []ToolCall
	for _, p := range m.Parts {
		if p.Kind == KindToolCall && p.ToolCall != nil {
			calls = append(calls, *p.ToolCall)
		}
	}
	return calls
}

// ToolSpec declares a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"input_schema"`
}

// Request is one model request in neutral form. Each [Protocol] encodes it.
type Request struct {
	Model           string // wire id (api_id)
	System          string
	Messages        []Message
	Tools           []ToolSpec
	MaxOutputTokens int
	// Thinking is the configured mode: "adaptive", "budget" or "none" for anthropic-messages,
	// "effort" or "none" for the openai protocols. Empty means the protocol's default.
	Thinking string
	// Effort is an optional effort level ("low", "medium", "high", …); empty leaves it to
	// the provider.
	Effort string
	// CacheKey, when set, groups requests that share a prompt prefix (prompt_cache_key).
	CacheKey string
}
