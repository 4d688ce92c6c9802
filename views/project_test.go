package views

import (
	"strings"
	"testing"
)

// TestProjectPanel: the servers a project offers are shown as the file writes them, their
// text escaped, with a labelled section and an approve button whose form sends back the
// digest of what was shown; approved ones show their states and no button.
func TestProjectPanel(t *testing.T) {
	v := ProjectView{File: "/src/p/.mcp.json", State: "offered", Sum: "abc", ApproveURL: "/profiles/default/s/s1/mcp/approve", Servers: []ProjectServerView{
		{Label: "project:everything", Kind: "stdio", Target: "npx -y server\u202e", Env: []string{"TOKEN=${GH_TOKEN}"}, Vars: []string{"GH_TOKEN"}},
		{Label: "project:old", Problem: "its type is \"sse\""},
	}}
	doc := tree(t, ProjectPanel(v))
	sec := one(t, doc, "section#"+IDProject)
	if got := textContent(one(t, doc, "#"+attr(sec, "aria-labelledby"))); got != "MCP servers of this project" {
		t.Errorf("the section's label = %q", got)
	}
	if got := textContent(one(t, doc, "code.project-target")); got != `npx -y server\u202e` {
		t.Errorf("the command = %q, want the bidi override shown as an escape", got)
	}
	form := one(t, doc, "form")
	if attr(form, "method") != "post" || attr(form, "action") != v.ApproveURL || attr(one(t, form, "input[name=sum]"), "value") != "abc" {
		t.Errorf("the approve form = %s %s", attr(form, "method"), attr(form, "action"))
	}
	if got := textContent(one(t, form, "button[type=submit]")); got != "Approve and start these servers" {
		t.Errorf("the button's name = %q", got)
	}
	if s := textContent(sec); !strings.Contains(s, "reads from your environment: GH_TOKEN") || !strings.Contains(s, `not started: its type is "sse"`) {
		t.Errorf("the panel = %q", s)
	}

	v.State, v.ApproveURL = "approved", ""
	v.Servers[0].State = "started, 12 tools"
	doc = tree(t, ProjectPanel(v))
	if len(all(doc, "form")) != 0 || textContent(one(t, doc, ".project-state")) != "started, 12 tools" {
		t.Errorf("the approved panel has a form or lacks the state")
	}
}
