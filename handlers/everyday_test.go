package handlers

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"myco.dev/agent/model"
)

func TestUnescapeHTML(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"command":"make \u0026\u0026 ./run \u003c in \u003e out"}`, `{"command":"make && ./run < in > out"}`},
		{`{"a":"\\u0026"}`, `{"a":"\\u0026"}`},        // an escaped backslash, then text
		{`{"a":"\\\u0026"}`, `{"a":"\\&"}`},           // an escaped backslash, then an escape
		{`{"a":"\u00e9 \u003C"}`, `{"a":"\u00e9 <"}`}, // other escapes stay
		{`{"a":"trailing \`, `{"a":"trailing \`},      // cut short
		{`plain`, `plain`},
	} {
		if got := unescapeHTML(tt.in); got != tt.want {
			t.Errorf("unescapeHTML(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestToolMarkdown(t *testing.T) {
	input, _ := json.Marshal(map[string]string{"command": "cd /src && make <x"}) // as encoding/json stores it: \u0026
	bash := model.ToolCall{ID: "c1", Name: "bash", Input: input}
	got := toolMarkdown(bash, &model.ToolResult{CallID: "c1", Text: "built\n[exit status 0]\n"})
	want := "*bash (c1)*\n\n```sh\ncd /src && make <x\n```\n\n*output*\n\n```\nbuilt\n[exit status 0]\n```"
	if got != want {
		t.Errorf("toolMarkdown(bash) =\n%s\nwant\n%s", got, want)
	}
	mcp := model.ToolCall{ID: "c2", Name: "mcp__fs__read", Input: json.RawMessage(`{"path":"a\u0026b.md"}`)}
	got = toolMarkdown(mcp, nil)
	want = "*tool call mcp__fs__read (c2)*\n\n```json\n{\n  \"path\": \"a&b.md\"\n}\n```"
	if got != want {
		t.Errorf("toolMarkdown(mcp) =\n%s\nwant\n%s", got, want)
	}
	// Output with a fence of its own gets a longer fence.
	got = toolMarkdown(bash, &model.ToolResult{CallID: "c1", Text: "```\n"})
	if want := "````\n```\n````"; !strings.Contains(got, want) {
		t.Errorf("toolMarkdown of fenced output = %q, want it inside %q", got, want)
	}
}

// TestComposerCommands: /help lists the commands in the composer and sends nothing; /new
// opens New session in the session's directory, on its model; an unknown command names the
// known ones.
func TestComposerCommands(t *testing.T) {
	ts := newTestServer(t)
	id, p := ts.session(t)
	hx := http.Header{"HX-Request": {"true"}}
	resp, body := ts.do(t, "POST", p+"submit", hx, url.Values{"text": {" /help "}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Commands: /compact") || !strings.Contains(body, `id="composer-notice"`) {
		t.Errorf("/help = %d:\n%s", resp.StatusCode, body)
	}
	resp, _ = ts.do(t, "POST", p+"submit", hx, url.Values{"text": {"/new"}})
	sess, st, _ := ts.mgr.Snapshot(t.Context(), id)
	want := "/profiles/default/new?cwd=" + url.QueryEscape(sess.Cwd) + "&model=" + url.QueryEscape(st.Model)
	if got := resp.Header.Get("HX-Redirect"); got != want {
		t.Errorf("/new sends the page to %q, want %q", got, want)
	}
	resp, body = ts.do(t, "POST", p+"submit", hx, url.Values{"text": {"/frobnicate"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "/compact, /new and /help") {
		t.Errorf("/frobnicate = %d:\n%s", resp.StatusCode, body)
	}
	if len(ts.fake.Requests()) != 0 {
		t.Errorf("a command reached the model")
	}
	if list, _ := ts.mgr.List(t.Context(), sessionsAll()); len(list) != 1 {
		t.Errorf("the commands made %d sessions, want the one", len(list))
	}
}
