package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"myco.dev/hosts"
	"myco.dev/hosts/mcp"
)

// fakeProjectMCP is the project servers of one directory, and the approvals asked for.
type fakeProjectMCP struct {
	mu        sync.Mutex // guards the fields below
	st        hosts.ProjectStatus
	approvals []string // "DIR SUM"
}

func (f *fakeProjectMCP) project(dir string) hosts.ProjectStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	if dir != f.st.Dir {
		return hosts.ProjectStatus{ProjectOffer: hosts.ProjectOffer{Dir: dir}}
	}
	return f.st
}

func (f *fakeProjectMCP) approve(dir, sum string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.approvals = append(f.approvals, dir+" "+sum)
	if sum != f.st.Sum {
		return fmt.Errorf("%s: %w", f.st.File, hosts.ErrProjectChanged)
	}
	f.st.Approved = true
	f.st.States = []hosts.MCPStatus{{Server: "project-everything", State: hosts.MCPListed, Tools: []mcp.ToolName{{Name: "mcp__project-everything__echo"}}}}
	return nil
}

// The session page of a session whose directory offers MCP servers says so, with the
// exact commands, URLs and variables, and a control that approves them: the approval is
// of the session's directory (never the form's) and of the content shown (its digest);
// another site cannot post it; a file changed meanwhile is refused with 409. Once
// approved, the page shows the servers' states and no control.
func TestProjectServersPage(t *testing.T) {
	f := &fakeProjectMCP{}
	ts := newTestServerWith(t, func(d *Deps) { d.Project, d.ApproveProject = f.project, f.approve })
	id, path := ts.session(t)
	f.st = hosts.ProjectStatus{ProjectOffer: hosts.ProjectOffer{Dir: ts.dir, File: ts.dir + "/.mcp.json", Sum: "abc", Servers: []hosts.ProjectServer{
		{Name: "everything", Server: "project-everything", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything", "a b\u202e"},
			Env: map[string]string{"TOKEN": "${GH_TOKEN}"}, Vars: []string{"GH_TOKEN"}},
		{Name: "docs", Server: "project-docs", URL: "https://docs.example/mcp", Headers: map[string]string{"X-Team": "core"}},
		{Name: "old", Server: "project-old", Problem: `its type is "sse"`},
	}}}

	_, page := ts.do(t, "GET", path, nil, nil)
	for _, want := range []string{
		`<section id="project-mcp"`,
		"offers MCP servers. myco starts none of them until you approve them; they would run with your rights:",
		"<strong>project:everything</strong>",
		`<code class="project-target">npx -y @modelcontextprotocol/server-everything &#39;a b\u202e&#39;</code>`,
		"env <code>TOKEN=${GH_TOKEN}</code>",
		"reads from your environment: GH_TOKEN",
		`<code class="project-target">https://docs.example/mcp</code>`,
		"header <code>X-Team: core</code>",
		"not started: its type is &#34;sse&#34;",
		`<form method="post" action="/profiles/default/s/` + id + `/mcp/approve">`,
		`<input type="hidden" name="sum" value="abc">`,
		`>Approve and start these servers</button>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the session page lacks %q", want)
		}
	}

	resp, _ := ts.do(t, "POST", path+"mcp/approve", http.Header{"Origin": {"http://evil.example"}}, url.Values{"sum": {"abc"}})
	if resp.StatusCode != http.StatusForbidden || len(f.approvals) != 0 {
		t.Errorf("another site's approve = %d, approvals %v; want 403 and none", resp.StatusCode, f.approvals)
	}
	resp, body := ts.do(t, "POST", path+"mcp/approve", nil, url.Values{"sum": {"old"}, "dir": {"/etc"}})
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "changed since the page showed it, so nothing was approved") {
		t.Errorf("approve of another content = %d %q, want 409", resp.StatusCode, body)
	}
	resp, _ = ts.do(t, "POST", path+"mcp/approve", nil, url.Values{"sum": {"abc"}, "dir": {"/etc"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/profiles/default/s/"+id+"/" {
		t.Errorf("approve = %d to %q, want 303 to the page", resp.StatusCode, resp.Header.Get("Location"))
	}
	if want := []string{ts.dir + " old", ts.dir + " abc"}; strings.Join(f.approvals, "|") != strings.Join(want, "|") {
		t.Errorf("approvals = %q, want %q: the session's directory and the sums posted", f.approvals, want)
	}
	_, page = ts.do(t, "GET", path, nil, nil)
	if !strings.Contains(page, "You approved the servers of") || !strings.Contains(page, `<span class="project-state">started, 1 tool</span>`) ||
		!strings.Contains(page, `<span class="project-state">starts with the session&#39;s next message</span>`) || strings.Contains(page, "Approve and start") {
		t.Errorf("the page after the approval lacks the states, or still offers the control:\n%s", page)
	}

	other := newTestServerWith(t, func(d *Deps) { d.Project, d.ApproveProject = f.project, f.approve })
	_, page = other.do(t, "GET", func() string { _, p := other.session(t); return p }(), nil, nil)
	if strings.Contains(page, "project-mcp") {
		t.Errorf("a session whose directory offers nothing shows the panel")
	}
}
