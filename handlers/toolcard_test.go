package handlers

import (
	"encoding/json"
	"testing"

	"myco.dev/agent/model"
)

// TestToolCardsAreHonest: a bash call reads as its command and says how it ended, a
// non-zero exit or a kill is a failure whatever the tool's error flag says, and an edit
// that was refused shows no diff.
func TestToolCardsAreHonest(t *testing.T) {
	call := func(name string, in map[string]any) model.ToolCall {
		b, _ := json.Marshal(in)
		return model.ToolCall{ID: "c1", Name: name, Input: b}
	}
	for _, tt := range []struct {
		name       string
		call       model.ToolCall
		text       string
		isError    bool
		status     string
		statusText string
		diff       bool
	}{
		{"exit 0", call("bash", map[string]any{"command": "true"}), "[exit status 0]", false, "ok", "exit 0", false},
		{"exit 1", call("bash", map[string]any{"command": "false"}), "oops\n[exit status 1]", false, "error", "exit 1", false},
		{"killed", call("bash", map[string]any{"command": "sleep 9"}), "[killed by signal killed]", false, "error", "killed", false},
		{"timed out", call("bash", map[string]any{"command": "sleep 999"}), "[killed after timeout 5s]", true, "error", "timed out", false},
		{"a session that exited 2", call("bash", map[string]any{"action": "read", "session_id": "b1"}), "x\n[session b1: exited, exit status 2]", false, "error", "exit 2", false},
		{"a running session", call("bash", map[string]any{"action": "read", "session_id": "b1"}), "x\n[session b1: running]", false, "ok", "", false},
		{"an applied edit", call("str_replace_based_edit_tool", map[string]any{"command": "create", "path": "/t/a.go", "file_text": "package a\n"}), "File created", false, "ok", "", true},
		{"a refused edit", call("str_replace_based_edit_tool", map[string]any{"command": "create", "path": "/t/a.go", "file_text": "package a\n"}), "the file exists", true, "error", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := toolView("/b", "s", "t", tt.call)
			setResult(&v, model.ToolResult{Text: tt.text, IsError: tt.isError})
			if v.Status != tt.status || v.StatusText != tt.statusText || (v.Diff != nil) != tt.diff {
				t.Errorf("status %q %q, diff %v; want %q %q, diff %v", v.Status, v.StatusText, v.Diff != nil, tt.status, tt.statusText, tt.diff)
			}
			if tt.call.Name == "bash" && v.Input != "" && v.Input[0] == '{' {
				t.Errorf("bash input shown as JSON: %q", v.Input)
			}
		})
	}
	if v := toolView("/b", "s", "t", call("bash", map[string]any{"command": "ls -la"})); v.Command != "ls -la" {
		t.Errorf("bash command = %q", v.Command)
	}
}

// TestMCPToolCard: an MCP server's tool reads as its server and tool, not the exposed name.
func TestMCPToolCard(t *testing.T) {
	v := toolView("/b", "s", "t", model.ToolCall{ID: "c1", Name: "mcp__everything__echo", Input: []byte(`{"message":"hi"}`)})
	if v.Name != "mcp everything/echo" || v.Summary != `{"message":"hi"}` {
		t.Errorf("card = %q %q", v.Name, v.Summary)
	}
}
