package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"myco.dev/hosts"
	"myco.dev/hosts/mcp"
	"myco.dev/sessions"
)

// fakeMCP is a fixed set of MCP server states and a project's; Discover counts its calls.
type fakeMCP struct {
	sts        []hosts.MCPStatus
	project    hosts.ProjectStatus
	discovered int
	projects   []string // the directories DiscoverProject was asked about
}

func (f *fakeMCP) MCPStatuses() []hosts.MCPStatus     { return f.sts }
func (f *fakeMCP) Discover(context.Context)           { f.discovered++ }
func (f *fakeMCP) Project(string) hosts.ProjectStatus { return f.project }
func (f *fakeMCP) DiscoverProject(_ context.Context, dir string) {
	f.projects = append(f.projects, dir)
}

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
	code := MCPList(t.Context(), IO{Stdout: &stdout, Stderr: &stderr}, f, "")
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
	if code := MCPList(t.Context(), IO{Stdout: &stdout, Stderr: &stderr}, &fakeMCP{}, "/src/p"); code != ExitOK || !strings.Contains(stdout.String(), "no MCP servers are configured") {
		t.Errorf("with none configured = %d, %q", code, stdout.String())
	}
}

// offered is a project file with a server of each kind and one that myco does not start.
var offered = hosts.ProjectOffer{Dir: "/src/p", File: "/src/p/.mcp.json", Sum: "abc", Servers: []hosts.ProjectServer{
	{Name: "docs", Server: "project-docs", URL: "https://docs.example/mcp", Headers: map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}"}, Vars: []string{"DOCS_TOKEN"}},
	{Name: "everything", Server: "project-everything", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything", "a b\x1b"}, Env: map[string]string{"LOG": "debug"}},
	{Name: "old", Server: "project-old", Problem: `its type is "sse"`},
}}

// myco mcp list run in a directory whose project offers servers says so after the
// configured ones: not approved, with the exact commands and URLs and how to approve them;
// changed since approved; approved, with the states of the servers started.
func TestMCPListProject(t *testing.T) {
	for _, tt := range []struct {
		name string
		st   hosts.ProjectStatus
		code int
		want string
	}{
		{"not approved", hosts.ProjectStatus{ProjectOffer: offered}, ExitOK, `project: /src/p/.mcp.json offers 3 MCP servers; myco starts none of them until you approve them (myco mcp approve /src/p)
project:docs: http https://docs.example/mcp
  header Authorization: Bearer ${DOCS_TOKEN}
  reads from your environment: DOCS_TOKEN
project:everything: stdio npx -y @modelcontextprotocol/server-everything 'a b\x1b'
  env LOG=debug
project:old: not started: its type is "sse"
`},
		{"changed", hosts.ProjectStatus{ProjectOffer: func() hosts.ProjectOffer { o := offered; o.Changed, o.Servers = true, o.Servers[2:]; return o }()}, ExitOK,
			`project: /src/p/.mcp.json changed since you approved it: myco starts none of its servers until you approve it again (myco mcp approve /src/p)
project:old: not started: its type is "sse"
`},
		{"approved", hosts.ProjectStatus{ProjectOffer: func() hosts.ProjectOffer { o := offered; o.Approved = true; return o }(), States: []hosts.MCPStatus{
			{Server: "project-docs", Host: hosts.Local, Transport: "http", State: hosts.MCPFailed, Err: "connection refused"},
			{Server: "project-everything", Host: hosts.Local, Transport: "stdio", State: hosts.MCPListed, Tools: []mcp.ToolName{{Name: "mcp__project-everything__echo", Remote: "echo"}}},
		}}, ExitError, `project: /src/p/.mcp.json, approved: its servers start for the sessions in this directory
project:docs: failed, http: connection refused
project:everything: started, stdio on local, 1 tool
  mcp__project-everything__echo
project:old: not started: its type is "sse"
`},
		{"unusable", hosts.ProjectStatus{ProjectOffer: hosts.ProjectOffer{Dir: "/src/p", File: "/src/p/.mcp.json", Problem: "it is a symbolic link"}}, ExitOK,
			"project: /src/p/.mcp.json cannot be used: it is a symbolic link\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout bytes.Buffer
			f := &fakeMCP{project: tt.st}
			code := MCPList(t.Context(), IO{Stdout: &stdout, Stderr: &bytes.Buffer{}}, f, "/src/p")
			if code != tt.code || stdout.String() != tt.want || !slices.Equal(f.projects, []string{"/src/p"}) {
				t.Errorf("myco mcp list = %d, projects discovered %v,\n%s\nwant %d, [/src/p],\n%s", code, f.projects, stdout.String(), tt.code, tt.want)
			}
		})
	}
}

// myco mcp approve shows the servers, then approves the content shown: with --yes, or
// never when no one at a terminal answered.
func TestMCPApprove(t *testing.T) {
	var stdout, stderr bytes.Buffer
	var got string
	approve := func(sum string) (hosts.ProjectOffer, error) {
		got = sum
		o := offered
		o.Approved = true
		return o, nil
	}
	if code := MCPApprove(IO{Stdin: strings.NewReader("y\n"), Stdout: &stdout, Stderr: &stderr}, offered, false, approve); code != ExitUsage || got != "" ||
		!strings.Contains(stderr.String(), "not approved: answer at a terminal, or run myco mcp approve --yes") {
		t.Errorf("approve without --yes, not at a terminal = %d, approved %q, stderr %q", code, got, stderr.String())
	}
	stdout.Reset()
	if code := MCPApprove(IO{Stdout: &stdout, Stderr: &stderr}, offered, true, approve); code != ExitOK || got != "abc" {
		t.Errorf("approve --yes = %d, approved %q", code, got)
	}
	if s := stdout.String(); !strings.HasPrefix(s, "/src/p/.mcp.json offers these MCP servers, which would run with your rights for the sessions in /src/p:\nproject:docs: http https://docs.example/mcp\n") ||
		!strings.Contains(s, "Approved /src/p/.mcp.json (sha256 abc): project:docs, project:everything start for the sessions in /src/p") {
		t.Errorf("approve --yes printed\n%s", s)
	}
	stderr.Reset()
	if code := MCPApprove(IO{Stdout: &stdout, Stderr: &stderr}, hosts.ProjectOffer{Dir: "/src/q"}, true, approve); code != ExitError || !strings.Contains(stderr.String(), "/src/q has no .mcp.json") {
		t.Errorf("approve where there is no file = %d, %q", code, stderr.String())
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

// The chat, started in a directory whose project offers servers that are not approved,
// says so with the servers as the file writes them and how to approve them; /status has
// a line of them.
func TestChatProjectNote(t *testing.T) {
	got := strings.Join(projectNote(hosts.ProjectStatus{ProjectOffer: offered}), "\n")
	want := `myco: /src/p/.mcp.json offers MCP servers; myco starts none of them until you approve them:
  project:docs: http https://docs.example/mcp
    header Authorization: Bearer ${DOCS_TOKEN}
    reads from your environment: DOCS_TOKEN
  project:everything: stdio npx -y @modelcontextprotocol/server-everything 'a b\x1b'
    env LOG=debug
  project:old: not started: its type is "sse"
  to approve them, run in a terminal: myco mcp approve /src/p (or use the session's page); sessions then get their tools`
	if got != want {
		t.Errorf("projectNote =\n%s\nwant\n%s", got, want)
	}
	approved := hosts.ProjectStatus{ProjectOffer: offered, States: []hosts.MCPStatus{
		{Server: "project-everything", State: hosts.MCPListed, Tools: []mcp.ToolName{{Name: "mcp__project-everything__echo"}}}}}
	approved.Approved = true
	if note := projectNote(approved); note != nil {
		t.Errorf("projectNote of approved servers = %q, want nothing", note)
	}
	for _, tt := range []struct {
		st   hosts.ProjectStatus
		want string
	}{
		{hosts.ProjectStatus{}, ""},
		{hosts.ProjectStatus{ProjectOffer: offered}, "project mcp: /src/p/.mcp.json not approved: none started (myco mcp approve)"},
		{approved, "project mcp: project:docs approved · project:everything listed (1 tool) · project:old not started"},
	} {
		if got := projectStatusLine(tt.st); got != tt.want {
			t.Errorf("projectStatusLine = %q, want %q", got, tt.want)
		}
	}
}
