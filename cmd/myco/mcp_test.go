package main

// End-to-end tests of MCP servers as tools, through the real binary and the scripted fake
// model: the reference servers that npm ci installs (server-everything over stdio and over
// streamable HTTP, server-filesystem), the fake server of mcptest (on the test binary's
// PATH as fakemcp) that crashes in the middle of a call, a command that does not exist, and
// server-everything on a host reached through a real sshd.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"myco.dev/hosts/mcp/mcptest"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/sshdtest"
)

// anthTool is a tool of an anthropic-messages request.
type anthTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// anthReq is the part of an anthropic-messages request these tests read.
type anthReq struct {
	System   json.RawMessage `json:"system"`
	Tools    []anthTool      `json:"tools"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			ToolUseID string          `json:"tool_use_id"`
			IsError   bool            `json:"is_error"`
			Content   json.RawMessage `json:"content"`
		} `json:"content"`
	} `json:"messages"`
}

func decodeReq(t *testing.T, r fakemodel.Request) anthReq {
	t.Helper()
	var req anthReq
	if err := json.Unmarshal(r.Body, &req); err != nil {
		t.Fatalf("request body: %v", err)
	}
	return req
}

// toolResult is one tool result of a request, as the model sees it.
type toolResult struct {
	text    string
	isError bool
	images  int
}

// results returns the tool results of a request's last user message, by tool name (from
// the tool_use blocks of the assistant message before it); a tool called twice keeps the
// last.
func results(t *testing.T, req anthReq) map[string]toolResult {
	t.Helper()
	names := map[string]string{}
	for _, m := range req.Messages {
		for _, c := range m.Content {
			if c.Type == "tool_use" {
				names[c.ID] = c.Name
			}
		}
	}
	out := map[string]toolResult{}
	last := req.Messages[len(req.Messages)-1]
	for _, c := range last.Content {
		if c.Type != "tool_result" {
			continue
		}
		r := toolResult{isError: c.IsError}
		var s string
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		switch {
		case json.Unmarshal(c.Content, &s) == nil:
			r.text = s
		case json.Unmarshal(c.Content, &blocks) == nil:
			for _, b := range blocks {
				switch b.Type {
				case "text":
					r.text += b.Text
				case "image":
					r.images++
				}
			}
		}
		out[names[c.ToolUseID]] = r
	}
	return out
}

// runP runs myco -p prompt with the environment env added, and returns its stderr.
func runP(t *testing.T, dir string, env []string, prompt string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), "-p", prompt)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "MYCO_PROFILE=", "MYCO_CONFIG="), env...)
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("myco -p: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	return stderr.String()
}

// TestMCPOneShot: myco -p with MCP servers of every kind. The model's first request
// carries their tools (after the host tools, in name order, with the servers' schemas and
// no host field) and a runtime note naming the server that did not start; the tools
// answer through each transport: echo, an image, the tool errors (isError) of
// server-everything and of server-filesystem outside its root, a read inside its root, a
// crash in the middle of a call (an unknown outcome), a server whose command does not
// exist; a long call is cancelled at tool_timeout_secs; the turn goes on to its answer.
// A second session with the same servers sends the same system prompt and tools, byte
// for byte.
func TestMCPOneShot(t *testing.T) {
	everything := mcptest.NPMServer(t, "mcp-server-everything")
	filesystem := mcptest.NPMServer(t, "mcp-server-filesystem")
	web := mcptest.EverythingHTTP(t)
	root, outside := t.TempDir(), t.TempDir()
	sshdtest.WriteFile(t, filepath.Join(root, "notes.txt"), "inside the root\n")
	secret := filepath.Join(outside, "secret.txt")
	sshdtest.WriteFile(t, secret, "outside the root\n")
	marker := filepath.Join(t.TempDir(), "crashed")
	call := func(name, args string) fakemodel.ToolCall { return fakemodel.ToolCall{Name: name, Args: args} }
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{
			call("mcp__everything__echo", `{"message":"hello over stdio"}`),
			call("mcp__everything__get-tiny-image", `{}`),
			call("mcp__everything__gzip-file-as-resource", `{"name":"x.gz","data":"ftp://example.com/x"}`),
			call("mcp__web__echo", `{"message":"hello over http"}`),
			call("mcp__fs__read_text_file", `{"path":"`+filepath.Join(root, "notes.txt")+`"}`),
			call("mcp__fake__crash", `{"marker":"`+marker+`"}`),
			call("mcp__nope__anything", `{}`),
		}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{
			call("mcp__fs__read_text_file", `{"path":"`+secret+`"}`),
			call("mcp__everything__trigger-long-running-operation", `{"duration":60,"steps":2}`),
		}},
		fakemodel.Turn{Text: "done"},
		fakemodel.Turn{Text: "again"},
	)
	cfg := fmt.Sprintf(`
[mcp_servers.everything]
command = %q
args = ["stdio"]
tool_timeout_secs = 3

[mcp_servers.web]
url = %q

[mcp_servers.fs]
command = %q
args = [%q]

[mcp_servers.fake]
command = "fakemcp"

[mcp_servers.nope]
command = "myco-no-such-mcp-server"
`, everything, web, filesystem, root)
	home := profileHome(t, "anthropic-messages", fake.URL, cfg)
	dir := t.TempDir()
	start := time.Now()
	stderr := runP(t, dir, []string{"MYCO_HOME=" + home}, "use the MCP tools")
	took := time.Since(start)

	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3; stderr:\n%s", len(reqs), stderr)
	}
	first := decodeReq(t, reqs[0])
	var names []string
	for _, tl := range first.Tools {
		names = append(names, tl.Name)
		if strings.HasPrefix(tl.Name, "mcp__") && strings.Contains(string(tl.InputSchema), `"host"`) {
			t.Errorf("%s has the host field: %s", tl.Name, tl.InputSchema)
		}
		if tl.Name == "mcp__everything__echo" && (!strings.Contains(tl.Description, "Echoes") || !strings.Contains(string(tl.InputSchema), `"message"`)) {
			t.Errorf("echo = %+v, want server-everything's description and schema", tl)
		}
	}
	isMCP := func(n string) bool { return strings.HasPrefix(n, "mcp__") }
	i := slices.IndexFunc(names, isMCP)
	if i < 1 || names[0] != "bash" || !slices.IsSorted(names[i:]) || slices.ContainsFunc(names[i:], func(n string) bool { return !isMCP(n) }) ||
		!slices.Contains(names, "mcp__web__echo") || !slices.Contains(names, "mcp__fs__read_text_file") || !slices.Contains(names, "mcp__fake__crash") {
		t.Errorf("tools = %v, want the host tools, then every listed server's tools in name order", names)
	}
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "mcp__nope__") }) {
		t.Errorf("tools = %v: the server that did not start has tools", names)
	}
	system := string(first.System)
	if !strings.Contains(system, "# MCP servers") || !strings.Contains(system, "everything (on local), fake (on local), fs (on local), nope (on local), web (over HTTP)") ||
		!strings.Contains(system, `- mcp__everything__echo\n`) {
		t.Errorf("the system prompt lacks the MCP servers or their tools:\n%s", system)
	}
	if note := lastUserText(t, reqs[0]); !regexp.MustCompile(`- local mcp server nope \(unavailable: its tools could not be listed: "myco-no-such-mcp-server" is not found in the PATH the server gets`).MatchString(note) {
		t.Errorf("the runtime note = %q, want nope unavailable", note)
	}

	res := results(t, decodeReq(t, reqs[1]))
	check := func(tool string, wantErr bool, want ...string) {
		t.Helper()
		r, ok := res[tool]
		if !ok {
			t.Errorf("no result for %s in %v", tool, res)
			return
		}
		if r.isError != wantErr {
			t.Errorf("%s: is_error = %v, want %v (%q)", tool, r.isError, wantErr, r.text)
		}
		for _, w := range want {
			if !strings.Contains(r.text, w) {
				t.Errorf("%s = %q, want it to contain %q", tool, r.text, w)
			}
		}
	}
	check("mcp__everything__echo", false, "Echo: hello over stdio")
	check("mcp__everything__get-tiny-image", false, "The image above is the MCP logo.")
	if n := res["mcp__everything__get-tiny-image"].images; n != 1 {
		t.Errorf("get-tiny-image carried %d images, want 1", n)
	}
	check("mcp__everything__gzip-file-as-resource", true, "Unsupported URL protocol")
	check("mcp__web__echo", false, "Echo: hello over http")
	check("mcp__fs__read_text_file", false, "inside the root")
	check("mcp__fake__crash", true, "mcp server fake ended while this call was in flight", "exit status 3", "outcome is unknown")
	check("mcp__nope__anything", true, "mcp server nope is not available: its tools could not be listed", "myco-no-such-mcp-server")
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the crash tool did not run: %v", err)
	}
	res = results(t, decodeReq(t, reqs[2]))
	check("mcp__fs__read_text_file", true, "Access denied")
	if strings.Contains(res["mcp__fs__read_text_file"].text, "outside the root") {
		t.Errorf("the refused read returned the file: %q", res["mcp__fs__read_text_file"].text)
	}
	check("mcp__everything__trigger-long-running-operation", true, "did not answer within 3s (tool_timeout_secs)", "notifications/cancelled")
	if took > time.Minute {
		t.Errorf("the turn took %s; the 60 s operation should have been cancelled after 3 s", took)
	}

	for _, want := range []string{
		`→ mcp everything/echo {"message":"hello over stdio"}`,
		"← mcp everything/echo ok (",
		"← mcp fake/crash outcome unknown (",
		"← mcp everything/gzip-file-as-resource error: ",
		"← mcp nope/anything error: mcp server nope is not available",
		"← mcp everything/trigger-long-running-operation error: mcp server everything: mcp__everything__trigger-long-running-operation did not answer within 3s",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	// A second session, in a new process, with the same servers.
	runP(t, dir, []string{"MYCO_HOME=" + home}, "again")
	reqs = fake.Requests()
	second := decodeReq(t, reqs[3])
	a, _ := json.Marshal(first.Tools)
	b, _ := json.Marshal(second.Tools)
	if string(first.System) != string(second.System) || string(a) != string(b) {
		t.Errorf("two sessions with the same servers sent different system prompts or tools:\n%s\n%s\n---\n%s\n%s", first.System, a, second.System, b)
	}
}

// TestMCPRemoteChat: server-everything on a host reached through a real sshd (the same
// machine: its node_modules by absolute path), configured with host = "devbox": its tools
// are listed there before the first request, its echo answers over the host protocol, the
// chat's tool lines and /status name it on devbox, and the runtime note of the next turn
// lists it running on devbox.
func TestMCPRemoteChat(t *testing.T) {
	everything := mcptest.NPMServer(t, "mcp-server-everything")
	srv := sshdtest.Start(t)
	if err := os.MkdirAll(filepath.Join(srv.Home, ".local", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binary(t), filepath.Join(srv.Home, ".local", "bin", "myco")); err != nil {
		t.Fatal(err)
	}
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "mcp__remote__echo", Args: `{"message":"from devbox"}`}}},
		fakemodel.Turn{Text: "echoed: {{tool_result}}"},
		fakemodel.Turn{Text: "seen"},
	)
	home := profileHome(t, "anthropic-messages", fake.URL, fmt.Sprintf("\n[mcp_servers.remote]\nhost = \"devbox\"\ncommand = %q\nargs = [\"stdio\"]\nstartup_timeout_secs = 30\n", everything))
	chat := startChat(t, "HOME="+srv.Home, "MYCO_HOME="+home)
	chat.say(t, fake, "echo on devbox", 2)
	reqs := fake.Requests()
	if !slices.ContainsFunc(decodeReq(t, reqs[0]).Tools, func(tl anthTool) bool { return tl.Name == "mcp__remote__echo" }) {
		t.Fatalf("the first request's tools lack mcp__remote__echo")
	}
	if r := results(t, decodeReq(t, reqs[1]))["mcp__remote__echo"]; r.isError || r.text != "Echo: from devbox" {
		t.Fatalf("the remote echo = %+v", r)
	}
	chat.say(t, fake, "what runs?", 3)
	if note := lastUserText(t, fake.Requests()[2]); !regexp.MustCompile(`- devbox mcp server remote \(running, pid \d+\)`).MatchString(note) {
		t.Errorf("the runtime note = %q, want remote running on devbox", note)
	}
	if _, err := chat.stdin.Write([]byte("/status\n")); err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(chat.stderr.String(), "mcp: remote @devbox listed"); <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("/status did not name the server; stderr:\n%s", chat.stderr)
		}
	}
	chat.quit(t)
	if s := chat.stderr.String(); !strings.Contains(s, `→ mcp remote/echo @devbox {"message":"from devbox"}`) || !strings.Contains(s, "← mcp remote/echo ok (") {
		t.Errorf("the chat's stderr =\n%s\nwant the MCP call's lines on devbox", s)
	}
}

// TestMCPAddRemoveRunningServer: myco mcp add and myco mcp remove, run while the server
// serves, change the profile's config.toml, and the running server applies the change as
// a config reload does (nothing runs that a new server would end, so it is applied at
// once): a session started after the add has the server's tools, one started after the
// remove has them no more.
func TestMCPAddRemoveRunningServer(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Turn{Text: "one"}, fakemodel.Turn{Text: "two"}, fakemodel.Turn{Text: "three"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	_, u, stderr := startServer(t, home)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr)
		}
	})
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	hasFS := func(r fakemodel.Request) bool {
		return slices.ContainsFunc(decodeReq(t, r).Tools, func(tl anthTool) bool { return tl.Name == "mcp__fs__echo" })
	}
	mcpCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary(t), append([]string{"mcp"}, args...)...)
		cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("myco mcp %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	newServer := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); strings.Count(stderr.String(), "serving with a new server") < n; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the change to mcp_servers was not applied")
			}
			boundedGet(t, u) // the server looks at its config when a request comes
		}
	}

	if _, snap := c.run("a", "hi"); snap["answer"] != "one" || hasFS(fake.Requests()[0]) {
		t.Fatalf("before the add: %v, tools with mcp__fs__echo: %v", snap, hasFS(fake.Requests()[0]))
	}
	if out := mcpCmd("add", "fs", "--", "fakemcp"); !strings.Contains(out, "added mcp server fs: ") {
		t.Fatalf("myco mcp add = %s", out)
	}
	newServer(1)
	if _, snap := c.run("b", "hi"); snap["answer"] != "two" || !hasFS(fake.Requests()[1]) {
		t.Fatalf("after the add: %v, want the request's tools to have mcp__fs__echo", snap)
	}
	mcpCmd("remove", "fs")
	newServer(2)
	if _, snap := c.run("c", "hi"); snap["answer"] != "three" || hasFS(fake.Requests()[2]) {
		t.Fatalf("after the remove: %v, want no mcp__fs__echo", snap)
	}
}

// TestMCPProjectApproval: a project directory whose .mcp.json names the reference server
// server-everything (through a script in the project that marks its start). myco -p there
// starts nothing of it and its tools are not in the model's request; myco mcp approve
// records the approval in the profile; then myco -p starts it and its tools reach the
// model's request, named mcp__project-everything__TOOL, and answer; once the file changed,
// the next run starts nothing again until it is approved again.
func TestMCPProjectApproval(t *testing.T) {
	everything := mcptest.NPMServer(t, "mcp-server-everything")
	fake := fakemodel.New(t,
		fakemodel.Turn{Text: "before"},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "e1", Name: "mcp__project-everything__echo", Args: `{"message":"from the project"}`}}},
		fakemodel.Turn{Text: "after"},
		fakemodel.Turn{Text: "changed"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	script := "#!/bin/sh\necho $$ >> " + marker + "\nexec " + everything + " stdio\n"
	if err := os.WriteFile(filepath.Join(dir, "everything.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	mcpJSON := filepath.Join(dir, ".mcp.json")
	if err := os.WriteFile(mcpJSON, []byte(`{"mcpServers": {"everything": {"command": "./everything.sh", "env": {"GREETING": "${USER:-you}"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"MYCO_HOME=" + home}
	myco := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary(t), args...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "MYCO_PROFILE=", "MYCO_CONFIG="), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("myco %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	projectTools := func(r fakemodel.Request) []string {
		var out []string
		for _, tl := range decodeReq(t, r).Tools {
			if strings.HasPrefix(tl.Name, "mcp__project-") {
				out = append(out, tl.Name)
			}
		}
		return out
	}

	runP(t, dir, env, "hi")
	if got := projectTools(fake.Requests()[0]); len(got) != 0 {
		t.Errorf("the request before the approval has the project's tools %v", got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the project's server was started before it was approved")
	}
	if out := myco("mcp", "list"); !strings.Contains(out, "project: "+mcpJSON+" offers 1 MCP server; myco starts none of them until you approve them") ||
		!strings.Contains(out, "project:everything: stdio ./everything.sh") {
		t.Errorf("myco mcp list before the approval =\n%s", out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("myco mcp list started the project's server before it was approved")
	}

	if out := myco("mcp", "approve", "--yes"); !strings.Contains(out, "Approved "+mcpJSON) {
		t.Fatalf("myco mcp approve =\n%s", out)
	}
	runP(t, dir, env, "use the project's echo")
	reqs := fake.Requests()
	if got := projectTools(reqs[1]); !slices.Contains(got, "mcp__project-everything__echo") {
		t.Fatalf("the request after the approval has the project's tools %v, want mcp__project-everything__echo", got)
	}
	if r := results(t, decodeReq(t, reqs[2]))["mcp__project-everything__echo"]; r.isError || r.text != "Echo: from the project" {
		t.Errorf("the project's echo = %+v", r)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the approved server's start left no mark: %v", err)
	}

	if err := os.WriteFile(mcpJSON, []byte(`{"mcpServers": {"everything": {"command": "./everything.sh", "args": ["more"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(marker)
	runP(t, dir, env, "and now?")
	if got := projectTools(fake.Requests()[3]); len(got) != 0 {
		t.Errorf("the request after the file changed has the project's tools %v", got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the server of the changed file was started before it was approved again")
	}
	if out := myco("mcp", "list"); !strings.Contains(out, "changed since you approved it") {
		t.Errorf("myco mcp list after the change =\n%s", out)
	}
}
