package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"myco.dev/hosts/mcp/mcptest"
	"myco.dev/internal/fakemodel"
)

// TestBrowserProjectServers: a session working in a directory whose .mcp.json names the
// reference server server-everything. Its page says the project offers it, with the
// exact command, and that nothing starts until it is approved; a message sent then has no
// tool of it. A real click on the labelled control approves it; the page then says so,
// and the next message's request has the server's tools, whose call answers.
func TestBrowserProjectServers(t *testing.T) {
	t.Parallel()
	everything := mcptest.NPMServer(t, "mcp-server-everything")
	f := newFixture(t,
		fakemodel.Turn{Text: "before the approval"},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "e1", Name: "mcp__project-everything__echo", Args: `{"message":"from the page"}`}}},
		fakemodel.Turn{Text: "echoed: {{tool_result}}"})
	proj := t.TempDir()
	mcpJSON, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": everything, "args": []string{"stdio"}}}})
	if err := os.WriteFile(filepath.Join(proj, ".mcp.json"), mcpJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(f.srv.URL+"s", url.Values{"cwd": {proj}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST %ss with cwd = %v, %v", f.srv.URL, resp, err)
	}
	resp.Body.Close()
	session := f.srv.origin() + resp.Header.Get("Location")
	projectTools := func(r fakemodel.Request) []string {
		var req struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		json.Unmarshal(r.Body, &req)
		var out []string
		for _, tl := range req.Tools {
			if strings.HasPrefix(tl.Name, "mcp__project-") {
				out = append(out, tl.Name)
			}
		}
		return out
	}

	b := newBrowser(t)
	tb := newTab(t, b, "main")
	tb.navigate(session)
	tb.waitLive()
	tb.wait("the project's offer", `document.getElementById("project-mcp")?.textContent.includes("offers MCP servers. myco starts none of them until you approve them")`)
	if got := eval[string](tb, `document.querySelector("#project-mcp code.project-target").textContent`); got != everything+" stdio" {
		t.Errorf("the page shows the command %q, want %q", got, everything+" stdio")
	}
	if got := eval[string](tb, `(() => { const s = document.getElementById("project-mcp"); return document.getElementById(s.getAttribute("aria-labelledby")).textContent; })()`); got != "MCP servers of this project" {
		t.Errorf("the panel's accessible name = %q", got)
	}
	tb.send("hi")
	tb.wait("the first answer", `document.getElementById("messages").textContent.includes("before the approval")`)
	if got := projectTools(f.model.Requests()[0]); len(got) != 0 {
		t.Errorf("the request before the approval has the project's tools %v", got)
	}

	if got := eval[string](tb, `document.getElementById("project-approve").textContent.trim()`); got != "Approve and start these servers" {
		t.Errorf("the approve button's name = %q", got)
	}
	tb.clickAndLoad("#project-approve")
	tb.waitLive()
	tb.wait("the approval on the page", `document.getElementById("project-mcp")?.textContent.includes("You approved the servers of") && !document.getElementById("project-approve")`)
	tb.send("use the project's echo")
	tb.wait("the echo's answer", `document.getElementById("messages").textContent.includes("echoed: Echo: from the page")`)
	if got := projectTools(f.model.Requests()[1]); !slices.Contains(got, "mcp__project-everything__echo") {
		t.Errorf("the request after the approval has the project's tools %v, want mcp__project-everything__echo", got)
	}
	tb.navigate(session)
	tb.wait("the server's state", `/started, \d+ tools/.test(document.querySelector("#project-mcp .project-state")?.textContent)`)
}
