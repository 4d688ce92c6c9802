package main

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
)

// parentScript is what a parent agent's bash does to delegate, with curl and nothing else:
// find its session (the only visible one here; an agent reads its id from its # Session
// block), fork a child, submit a bounded task and wait for its turn's end (wait: true), read
// the answer as it is.
const parentScript = `set -e
api="$MYCO_SERVER_URL/api"
j='Content-Type: application/json'
parent=$(curl -sf "$api/sessions" | grep -o '"session_id": "[^"]*"' | head -1 | cut -d'"' -f4)
child=$(curl -sf -X POST -H "$j" -d '{"request_id":"fork-1","parent_session":"'"$parent"'","fork":true}' "$api/sessions" | grep -o '"session_id": "[^"]*"' | cut -d'"' -f4)
curl -sf -X POST -H "$j" -d '{"request_id":"task-1","action":"submit","text":"Compute 6*7 and answer with the number only.","wait":true}' "$api/sessions/$child/actions" | grep -q '^  "ended": true'
echo "answer: $(curl -sf "$api/sessions/$child/answer")"
echo "child=$child"`

// TestNestedAgent runs the nested-agent recipe end to end through the real binary: the
// parent agent, from its bash tool, forks a hidden child through the API, hands it a task,
// polls until it is done and reports its answer.
func TestNestedAgent(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed: the recipe's client is an agent's curl (.ci/run installs it)")
	}
	args, _ := json.Marshal(map[string]string{"command": parentScript})
	srv := fakemodel.New(t,
		fakemodel.Turn{Text: "I'll delegate this.", ToolCalls: []fakemodel.ToolCall{{ID: "delegate", Name: "bash", Args: string(args)}}},
		fakemodel.Turn{Text: "42"},
		fakemodel.Turn{Text: "The child reports: {{tool_result}}"})
	home := profileHome(t, "anthropic-messages", srv.URL, "")
	_, u, stderr := startServer(t, home)
	api := strings.TrimSuffix(u, "/") + "/api"
	post := func(path, body string) map[string]any {
		resp, err := http.Post(api+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s = %d %v", path, resp.StatusCode, out)
		}
		return out
	}
	get := func(path string) map[string]any {
		resp, err := http.Get(api + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return out
	}
	parent := post("/sessions", `{"request_id":"top"}`)["session_id"].(string)
	post("/sessions/"+parent+"/actions", `{"request_id":"go","action":"submit","text":"What is 6*7? Ask a child."}`)
	var snap map[string]any
	deadline := time.Now().Add(60 * time.Second)
	for {
		snap = get("/sessions/" + parent)
		if snap["busy"] == false && snap["last_turn"] != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the parent never finished: %v\nstderr:\n%s", snap, stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	answer, _ := snap["answer"].(string)
	if !strings.Contains(answer, "answer: 42") {
		t.Fatalf("parent answer = %q, want the child's 42 (stderr:\n%s)", answer, stderr)
	}
	kids := snap["children"].([]any)
	if len(kids) != 1 {
		t.Fatalf("children = %v", kids)
	}
	child := kids[0].(map[string]any)["session_id"].(string)
	if !strings.Contains(answer, "child="+child) {
		t.Errorf("the answer names another child: %q", answer)
	}
	if tree := snap["tree"].(map[string]any); tree["sessions"] != float64(2) {
		t.Errorf("tree = %v", tree)
	}
	list := get("/sessions")["sessions"].([]any)
	if len(list) != 1 {
		t.Errorf("the ordinary listing shows %d sessions, want the parent only", len(list))
	}
	cs := get("/sessions/" + child)
	if cs["parent_session"] != parent || cs["hidden"] != true || cs["answer"] != "42" {
		t.Errorf("child = %v", cs)
	}
	// The child's request carried the parent's conversation, the running call as an
	// unknown outcome, and the child's own identity; its tools ran with MYCO_SERVER_URL.
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	body := string(reqs[1].Body)
	for _, want := range []string{"What is 6*7? Ask a child.", "still running in session " + parent, "session id: " + child, "parent session: " + parent} {
		if !strings.Contains(body, want) {
			t.Errorf("the child's request lacks %q", want)
		}
	}
}
