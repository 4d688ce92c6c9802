package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
)

// TestConfigReloadKeepsTools (issue 28): editing config.toml ends no live tool. A bash
// start process (a loop writing a counter to a file) keeps running through an edit that
// adds a comment and one that adds a model; the new model is usable at once, and its first
// turn runs in the same runtime (the runtime facts list the running bash session, and say
// no new runtime began), with the credential variable the new model's auth names kept
// from the tool processes. A change that needs the tools started again ([mcp_servers])
// waits while the loop runs, and every page says so and why; once the loop ends, it is
// applied.
func TestConfigReloadKeepsTools(t *testing.T) {
	dir := t.TempDir()
	alive, stop := filepath.Join(dir, "alive"), filepath.Join(dir, "stop")
	loop := `i=0; while [ ! -e ` + stop + ` ]; do i=$((i+1)); echo $i > ` + alive + `; sleep 0.1; done`
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "bash", Args: `{"action":"start","command":"` + loop + `"}`}}},
		fakemodel.Turn{Text: "started"},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c2", Name: "bash", Args: `{"command":"echo \"key=[$M2_KEY]\""}`}}},
		fakemodel.Turn{Text: "m2: {{tool_result}}"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	cfg := filepath.Join(home, "profiles", "default", "config.toml")
	good, _ := os.ReadFile(cfg)
	_, u, stderr := startServerEnv(t, home, []string{"M2_KEY=secret-of-m2"})
	t.Cleanup(func() {
		os.WriteFile(stop, nil, 0o600)
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr)
		}
	})
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
		}
	}
	counter := func() int {
		b, _ := os.ReadFile(alive)
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	running := func(when string) {
		t.Helper()
		n := counter()
		until("the bash start loop counts on "+when, func() bool { return counter() >= n+3 })
	}
	// applied waits until the server has applied the config n times: the server looks at
	// the file at most once a second, when a request comes.
	applied := func(n int) {
		t.Helper()
		until("the config change is applied", func() bool {
			boundedGet(t, u)
			return strings.Count(stderr.String(), "the profile's config changed") >= n
		})
	}

	id, snap := c.run("a", "start a loop")
	if snap["answer"] != "started" {
		t.Fatalf("the first turn: %v", snap)
	}
	running("after its start")

	withComment := append([]byte("# a comment that changes nothing\n"), good...)
	os.WriteFile(cfg, withComment, 0o600)
	applied(1)
	running("after a comment was added to config.toml")

	withModel := append(append([]byte("model = \"m\"\n"), withComment...), []byte("\n[models.m2]\nprotocol = \"anthropic-messages\"\nbase_url = \""+fake.URL+
		"\"\napi_id = \"m2-api\"\ncontext_window = 100000\nauth = { source = \"env\", var_name = \"M2_KEY\" }\n")...)
	os.WriteFile(cfg, withModel, 0o600)
	until("the new model is in the catalog", func() bool {
		code, _ := c.post("/sessions", `{"request_id":"new-m2","model":"m2"}`)
		return code == 201
	})
	running("after a model was added to config.toml")
	if code, out := c.post("/sessions/"+id+"/actions", `{"request_id":"m2","action":"select_model","model":"m2"}`); code != 200 {
		t.Fatalf("select_model m2 = %d %v", code, out)
	}
	if snap := c.submitWait(id, "s2", "now on m2"); !strings.HasPrefix(snap["answer"].(string), "m2: key=[]\n") {
		t.Errorf("the turn on the new model: %v, want the credential variable kept from bash", snap)
	}
	reqs := fake.Requests()
	last := string(reqs[len(reqs)-2].Body) // the request that made the bash call
	if !strings.Contains(last, `"model":"m2-api"`) || !strings.Contains(last, "bash session") || strings.Contains(last, "This is a new runtime") {
		t.Errorf("the first request on m2 = %s, want model m2-api, the running bash session among the handles, and no new runtime", last)
	}
	running("after a turn on the new model")

	withMCP := append(withModel, []byte("\n[mcp_servers.later]\ncommand = \"true\"\nenabled = false\n")...)
	os.WriteFile(cfg, withMCP, 0o600)
	until("the pages say the MCP change waits for the loop", func() bool {
		_, p := boundedGet(t, u+"s/"+id+"/")
		return strings.Contains(p, "its change to mcp_servers needs the tools started again") && strings.Contains(p, "session "+id+" keeps a process running")
	})
	running("while the MCP change waits")
	if strings.Contains(stderr.String(), "serving with a new server") {
		t.Fatal("a new server replaced the one whose session keeps a process running")
	}
	os.WriteFile(stop, nil, 0o600)
	until("the MCP change is applied once the loop ended", func() bool {
		_, p := boundedGet(t, u+"s/"+id+"/")
		return strings.Contains(stderr.String(), "serving with a new server") && !strings.Contains(p, "needs the tools started again")
	})
}
