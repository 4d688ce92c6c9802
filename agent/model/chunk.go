package model

import "time"

// Chunk is one streamed event of a model response. The set is closed: TextDelta,
// ThinkingDelta, ToolCallStart, ToolCallDelta, Notice and Done.
type Chunk interface{ isChunk() }

// TextDelta is visible assistant text as it streams.
type TextDelta struct{ Text string }

// ThinkingDelta is reasoning text as it streams (thinking, summaries, reasoning_content).
type ThinkingDelta struct{ Text string }

// ToolCallStart announces a tool call; its arguments follow as ToolCallDelta chunks.
type ToolCallStart struct {
	Index int
	ID    string
	Name  string
}

// ToolCallDelta is a fragment of a tool call's JSON arguments.
type ToolCallDelta struct {
	Index int
	Args  string
}

// Notice is something the user should see that is not part of the conversation, such as a
// retry after a transient failure. It is never added to the model's history.
type Notice struct {
	Text    string
	Attempt int           // the attempt that failed, counting from 1
	Delay   time.Duration // how long until the next attempt
	Err     error
}

// Done ends a successful response: the assembled assistant message (with everything needed
// to replay it to the same provider), why it stopped and what it cost.
type Done struct {
	Message Message
	Stop    StopReason
	Usage   Usage
}

func (TextDelta) isChunk()     {}
func (ThinkingDelta) isChunk() {}
func (ToolCallStart) isChunk() {}
func (ToolCallDelta) isChunk() {}
func (Notice) isChunk()        {}
func (Done) isChunk()          {}

// StopReason is why a response ended, in neutral terms.
type StopReason string

const (
	StopEnd       StopReason = "end"        // a finished answer (end_turn, stop, completed)
	StopToolUse   StopReason = "tool_use"   // the response asks for tools to run
	StopMaxTokens StopReason = "max_tokens" // cut off by the output cap (max_tokens, length, incomplete)
	StopRefusal   StopReason = "refusal"    // refusal or content filter
	StopPause     StopReason = "pause"      // anthropic pause_turn: resend to continue
	StopContext   StopReason = "context"    // the context window was exceeded
	StopOther     StopReason = "other"
)

// Usage is token accounting for one response. Input counts every prompt token, cached or
// not; CacheRead and CacheWrite say how many of those hit or filled a cache.
type Usage struct {
	Input      int `json:"input"`
	Output     int `json:"output"`
	CacheRead  int `json:"cache_read,omitempty"`
	CacheWrite int `json:"cache_write,omitempty"`
	Reasoning  int `json:"reasoning,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		Input:      u.Input + v.Input,
		Output:     u.Output + v.Output,
		CacheRead:  u.CacheRead + v.CacheRead,
		CacheWrite: u.CacheWrite + v.CacheWrite,
		Reasoning:  u.Reasoning + v.Reasoning,
	}
}
