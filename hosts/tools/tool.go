package tools

import (
	"context"
	"encoding/json"

	"myco.dev/agent/model"
)

// Result is what a tool call returns to the model.
type Result struct {
	Text    string        `json:"text"`
	Images  []model.Image `json:"images,omitempty"`
	IsError bool          `json:"is_error,omitempty"`
	// Unknown marks a call whose outcome was never observed (the host that ran it is
	// gone). Only a controller sets it, never a tool.
	Unknown bool `json:"unknown,omitempty"`
}

// Tool is one host tool service. Resources a call creates (bash sessions, editor read
// stamps) belong to owner, the session runtime that made the call; another owner cannot see
// or touch them. Implementations are safe for concurrent use.
type Tool interface {
	Name() string
	Spec() model.ToolSpec
	Call(ctx context.Context, owner string, input json.RawMessage) Result
}

// Errorf returns an error result.
func Errorf(format string, args ...any) Result {
	return Result{Text: sprintf(format, args...), IsError: true}
}
