package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"myco.dev/hosts"
	"myco.dev/hosts/mcp"
	"myco.dev/sessions"
)

// fakeMCP is a fixed set of MCP server states; Discover counts its calls.
type fakeMCP struct {
	sts        []hosts.MCPStatus
	discovered int
}

func (f *fakeMCP) MCPStatuses() []hosts.MCPStatus { return f.sts }
func (f *fakeMCP) Discover(context.Context)       { f.discovered++ }

var testMCP = &fakeMCP{sts: []hosts.MCPStatus{
	{Server: "db", Host: "devbox", Transport: "stdio", State: hosts.MCPListed, Tools: []mcp.ToolName{{Name: "mcp__db__query", Remote: "query"}}},
	{Server: "everything", Host: hosts.Local, Transport: "stdio", State: hosts.MCPListed, Running: 1, Tools: []mcp.ToolName{
		{Name: "mcp__everything__echo", Remote: "echo"}, {Name: "mcp__everything__read_file_3f0c9a1e", Remote: "read.file", Mapped: true}}},
	{Server: "gone", Host: hosts.Local, Transport: "stdio", State: hosts.MCPFailed, Err: `"gone-mcp" is not found in the PATH the server gets (/usr/bin)` + "\x1b[31m",
		RetryAt: time.Date(2026, 9, 1, 12, 0, 5, 0, time.UTC)},
	{Server: "docs", Host: hosts.Local, Transport: "http", State: hosts.MCPListed},
	{Server: "old", State: hosts.MCPDisabled},
}}

func TestMCPCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	f := &fakeMCP{sts: testMCP.sts}
	code := MCPCommand(t.Context(), IO{Stdout: &stdout, Stderr: &stderr}, []string{"list"}, f)
	want := `db: started, stdio on host devbox, 1 tool
  mcp__db__query
everything: started, stdio on local, 2 tools
  mcp__everything__echo
  mcp__everything__read_file_3f0c9a1e  (the server's "read.file")
gone: failed, stdio on local: "gone-mcp" is not found in the PATH the server gets (/usr/bin)\x1b[31m (myco tries again after 12:00:05)
docs: started, http, 0 tools
old: disabled (enabled = false)
`
	if code != ExitError || stdout.String() != want || f.discovered != 1 {
		t.Errorf("myco mcp list = %d, discovered %d times,\n%s\nwant 1, once,\n%s", code, f.discovered, stdout.String(), want)
	}
	stdout.Reset()
	if code := MCPCommand(t.Context(), IO{Stdout: &stdout, Stderr: &stderr}, []string{"list"}, &fakeMCP{}); code != ExitOK || !strings.Contains(stdout.String(), "no MCP servers are configured") {
		t.Errorf("with none configured = %d, %q", code, stdout.String())
	}
	if code := MCPCommand(t.Context(), IO{Stdout: &stdout, Stderr: &stderr}, []string{"start"}, &fakeMCP{}); code != ExitUsage || !strings.Contains(stderr.String(), "usage: myco mcp list") {
		t.Errorf("myco mcp start = %d, %q", code, stderr.String())
	}
}

func TestMCPStatusLine(t *testing.T) {
	got := mcpStatusLine(testMCP)
	want := "mcp: db @devbox listed (1 tool) · everything listed (2 tools, 1 running) · gone failed (\"gone-mcp\" is not found in the PATH the server gets (/usr/bin)\x1b[31m) · docs listed (0 tools) · old disabled"
	if got != want {
		t.Errorf("mcpStatusLine = %q, want %q", got, want)
	}
	if got := mcpStatusLine(&fakeMCP{}); got != "" {
		t.Errorf("mcpStatusLine with no server = %q", got)
	}
}

// TestPrinterMCPLines: an MCP call's lines name the server and the tool (its server's own
// name when mapped) and, in the chat, the host its server runs on.
func TestPrinterMCPLines(t *testing.T) {
	updates := []sessions.Update{
		{Type: sessions.UpdateToolStarted, Tool: "mcp__db__query", Host: "local", Input: json.RawMessage(`{"sql":"select 1"}`)},
		{Type: sessions.UpdateToolFinished, Tool: "mcp__db__query", Host: "local", Duration: 0.25},
		{Type: sessions.UpdateToolStarted, Tool: "mcp__everything__read_file_3f0c9a1e", Host: "local", Input: json.RawMessage(`{}`)},
		{Type: sessions.UpdateToolFinished, Tool: "mcp__everything__read_file_3f0c9a1e", Host: "local", Unknown: true},
		{Type: sessions.UpdateToolStarted, Tool: "mcp__x__y", Host: "local", Input: json.RawMessage(`{}`)},
		{Type: sessions.UpdateToolFinished, Tool: "mcp__x__y", Host: "local", IsError: true, Text: "mcp server x is not available"},
	}
	for _, tt := range []struct {
		name   string
		stream bool
		want   string
	}{
		{"chat", true, `→ mcp db/query @devbox {"sql":"select 1"}
← mcp db/query ok (250 ms)
→ mcp everything/read.file @local {}
← mcp everything/read.file outcome unknown (0 ms)
→ mcp x/y {}
← mcp x/y error: mcp server x is not available (0 ms)
`},
		{"one-shot", false, `→ mcp db/query {"sql":"select 1"}
← mcp db/query ok (250 ms)
→ mcp everything/read.file {}
← mcp everything/read.file outcome unknown (0 ms)
→ mcp x/y {}
← mcp x/y error: mcp server x is not available (0 ms)
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			p := newPrinter(&bytes.Buffer{}, &stderr, false)
			p.stream, p.mcp = tt.stream, testMCP
			for _, u := range updates {
				p.update(u)
			}
			if got := stderr.String(); got != tt.want {
				t.Errorf("stderr =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
