package sessions

import (
	"testing"

	"myco.dev/agent/model"
)

// TestToolOutcome: a bash call says how it ended, and a non-zero exit or a kill is a
// failure whatever the tool's error flag says; a stopped call shows what it printed.
func TestToolOutcome(t *testing.T) {
	stopped := stoppedResult("c1", "partial line\n[killed: the call was cancelled]\n")
	for _, tt := range []struct {
		name   string
		tool   string
		r      model.ToolResult
		want   Outcome
		ending string // BashEndLine of the output
	}{
		{"exit 0", "bash", model.ToolResult{Text: "hi\n[exit status 0]\n"}, Outcome{"ok", "exit 0", "hi\n[exit status 0]\n"}, "[exit status 0]"},
		{"exit 1", "bash", model.ToolResult{Text: "oops\n[exit status 1]"}, Outcome{"error", "exit 1", "oops\n[exit status 1]"}, "[exit status 1]"},
		{"exit 0 with the error flag", "bash", model.ToolResult{Text: "[exit status 0]", IsError: true}, Outcome{"error", "exit 0", "[exit status 0]"}, "[exit status 0]"},
		{"killed", "bash", model.ToolResult{Text: "[killed by signal killed]"}, Outcome{"error", "killed", "[killed by signal killed]"}, "[killed by signal killed]"},
		{"timed out", "bash", model.ToolResult{Text: "[killed after timeout 5s]", IsError: true}, Outcome{"error", "timed out", "[killed after timeout 5s]"}, "[killed after timeout 5s]"},
		{"a session that exited 2", "bash", model.ToolResult{Text: "x\n[session b1: exited, exit status 2]"}, Outcome{"error", "exit 2", "x\n[session b1: exited, exit status 2]"}, "[session b1: exited, exit status 2]"},
		{"a running session", "bash", model.ToolResult{Text: "x\n[session b1: running]"}, Outcome{"ok", "", "x\n[session b1: running]"}, "[session b1: running]"},
		{"stopped", "bash", stopped, Outcome{"unknown", "stopped", "partial line\n[killed: the call was cancelled]\n"}, "[killed: the call was cancelled]"},
		{"stopped before it printed", "bash", stoppedResult("c1", ""), Outcome{"unknown", "stopped", ""}, ""},
		{"unknown", "bash", model.ToolResult{Text: "the host dropped", Unknown: true}, Outcome{"unknown", "", "the host dropped"}, ""},
		{"another tool's error", "str_replace_based_edit_tool", model.ToolResult{Text: "[exit status 0]", IsError: true}, Outcome{"error", "", "[exit status 0]"}, "[exit status 0]"},
		{"another tool", "view_image", model.ToolResult{Text: "an image"}, Outcome{"ok", "", "an image"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ToolOutcome(tt.tool, tt.r); got != tt.want {
				t.Errorf("ToolOutcome(%q, %+v) = %+v, want %+v", tt.tool, tt.r, got, tt.want)
			}
			if got := BashEndLine(tt.want.Output); got != tt.ending {
				t.Errorf("BashEndLine(%q) = %q, want %q", tt.want.Output, got, tt.ending)
			}
		})
	}
}
