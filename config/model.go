package config

import (
	"math"
	"time"
)

// The wire protocols a gateway or model can speak.
const (
	ProtocolAnthropicMessages = "anthropic-messages" // {base_url}/v1/messages
	ProtocolOpenAIResponses   = "openai-responses"   // {base_url}/responses
	ProtocolOpenAICompletions = "openai-completions" // {base_url}/chat/completions
)

// The thinking modes. anthropic-messages accepts adaptive (its default), budget and none;
// the OpenAI protocols accept effort (their default) and none.
const (
	ThinkingAdaptive = "adaptive"
	ThinkingBudget   = "budget"
	ThinkingEffort   = "effort"
	ThinkingNone     = "none"
)

// Defaults applied to keys the config leaves unset.
const (
	DefaultAttachTimeoutSecs     = 10
	DefaultMaxPreludeBytes       = 262_144
	DefaultCompactionMaxRequests = 64
	DefaultMaxRequestBytes       = 30_000_000
	DefaultMaxOutputTokens       = 8192
	DefaultMaxImageBase64Bytes   = 5 * 1024 * 1024
	DefaultMaxTruncatedResumes   = 3

	DefaultResponseHeaderTimeout = 120 * time.Second // response_header_timeout_secs
	DefaultStreamIdleTimeout     = 300 * time.Second // stream_idle_timeout_secs
)

// maxTimeoutSecs is the largest timeout in seconds a [time.Duration] holds.
const maxTimeoutSecs = math.MaxInt64 / int64(time.Second)

// DefaultRetry returns the retry policy of a gateway or model without a retry table; each
// field a retry table leaves unset keeps its value from here.
func DefaultRetry() Retry {
	return Retry{MaxAttempts: 3, InitialBackoffMs: 500, MaxBackoffMs: 30_000, BackoffMultiplier: 2.0}
}

// Gateway is a place models are served from, as configured in [gateways.NAME] with the
// defaults applied.
type Gateway struct {
	Protocol        string
	BaseURL         string // without a trailing slash
	Auth            Auth
	Retry           Retry
	MaxRequestBytes int
	// ResponseHeaderTimeout bounds the wait for a response's headers, and
	// StreamIdleTimeout the silence between two reads of a streamed body; 0 disables.
	ResponseHeaderTimeout time.Duration
	StreamIdleTimeout     time.Duration
	Prices                *Prices // nil when the gateway sets none
}

// Prices are what a model's tokens cost, in money per million tokens (dollars, unless
// the catalog means another currency: myco only multiplies). Input is the price of a
// prompt token neither read from nor written to the provider's cache; CacheRead and
// CacheWrite, of those that were (they default to Input).
type Prices struct {
	Input, Output, CacheRead, CacheWrite float64

	// which fields the file set, so that a model's prices table overrides its gateway's
	// field by field
	setInput, setOutput, setCacheRead, setCacheWrite bool
}

// Model is one resolved catalog entry: the [models.KEY] table merged over its gateway,
// with the defaults applied. It is what a provider driver needs to talk to the model.
type Model struct {
	Key             string // the catalog key, as passed to --model and recorded in sessions
	APIID           string // the id sent on the wire; defaults to Key
	Gateway         string // the gateway it came through; empty when configured inline
	Protocol        string
	BaseURL         string // without a trailing slash
	Auth            Auth
	Retry           Retry
	MaxRequestBytes int // cap on the serialized request body
	// ResponseHeaderTimeout bounds the wait for a response's headers after the request
	// is sent; 0 disables it.
	ResponseHeaderTimeout time.Duration
	// StreamIdleTimeout bounds the silence between two reads of a streamed response
	// body; 0 disables it.
	StreamIdleTimeout time.Duration

	ContextWindow int
	Thinking      string
	// Effort is the reasoning effort sent (minimal, low, medium, high, xhigh): Responses'
	// reasoning.effort, Chat Completions' reasoning_effort, Anthropic's output effort. It
	// defaults to medium in the effort mode; empty sends none.
	Effort              string
	MaxOutputTokens     int
	MaxImageBase64Bytes int     // largest image accepted, measured on the base64 payload
	MaxTruncatedResumes int     // consecutive max_tokens resumes per turn; 0 disables
	AutoCompactAt       float64 // fraction of ContextWindow that triggers compaction; 0 disables
	// Prices are the model's prices: its gateway's, with the fields of its own prices
	// table over them; nil when neither sets any (its cost is unknown).
	Prices *Prices
}

// Retry is a retry policy for requests that fail before anything has streamed.
type Retry struct {
	MaxAttempts       int // total tries, including the first; 1 disables retry
	InitialBackoffMs  int
	MaxBackoffMs      int
	BackoffMultiplier float64
}

// DefaultEffort is the effort of the effort mode when the model sets none.
const DefaultEffort = "medium"

// efforts are the reasoning efforts a model may set.
var efforts = []string{"minimal", "low", "medium", "high", "xhigh"}

func thinkingModes(protocol string) []string {
	switch protocol {
	case ProtocolAnthropicMessages:
		return []string{ThinkingAdaptive, ThinkingBudget, ThinkingNone}
	case ProtocolOpenAIResponses, ProtocolOpenAICompletions:
		return []string{ThinkingEffort, ThinkingNone}
	}
	return nil
}

var protocols = []string{ProtocolAnthropicMessages, ProtocolOpenAIResponses, ProtocolOpenAICompletions}
