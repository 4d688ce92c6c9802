package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
	"myco.dev/sessions"
)

// project makes a repository at dir with its own AGENTS.md and one source file.
func project(t *testing.T, dir, name string) {
	t.Helper()
	for p, text := range map[string]string{
		".git/HEAD":                   "ref: refs/heads/main\n",
		"AGENTS.md":                   "Guidance of " + name + ".\n",
		"src/" + name + ".go":         "package " + name + "\n\nfunc F() {}\n",
		"../outside-" + name + ".txt": "TOP SECRET",
	} {
		p = filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(filepath.Join(dir, "..", "outside-"+name+".txt"), filepath.Join(dir, "escape.txt"))
}

// systemOf is the system prompt of an anthropic-messages request.
func systemOf(t *testing.T, r fakemodel.Request) string {
	t.Helper()
	var body struct {
		System json.RawMessage `json:"system"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	return string(body.System)
}

// TestProjectsThroughTheServer: one server, sessions in two directories. Each one's bash
// runs pwd in its own directory, its system prompt carries its own AGENTS.md (two sessions
// in one directory get the same bytes), and its answer links to its own files, which the
// viewer serves; a link out of the directory (../x, encoded, a symlink) serves nothing.
func TestProjectsThroughTheServer(t *testing.T) {
	root := t.TempDir()
	a, b, serverDir := filepath.Join(root, "alpha"), filepath.Join(root, "beta"), filepath.Join(root, "server")
	project(t, a, "alpha")
	project(t, b, "beta")
	os.Mkdir(serverDir, 0o700)
	pwd, _ := json.Marshal(map[string]string{"command": "pwd"})
	turn := func(name string) []fakemodel.Turn {
		return []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{{ID: "pwd_" + name, Name: "bash", Args: string(pwd)}}},
			{Text: "Working in {{tool_result}}: see [the code](src/" + name + ".go), `src/" + name + ".go:3` and [out](../outside-" + name + ".txt)."},
		}
	}
	srv := fakemodel.New(t, append(append(turn("alpha"), turn("beta")...), fakemodel.Turn{Text: "again"})...)
	home := profileHome(t, "anthropic-messages", srv.URL, "")
	cmd := exec.Command(binary(t), "--addr", "127.0.0.1:0")
	cmd.Dir = serverDir
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	out, stderr := startPiped(t, cmd)
	line, err := readLine(out)
	if err != nil {
		t.Fatalf("no URL: %v\n%s", err, stderr)
	}
	base := strings.TrimSuffix(strings.TrimSpace(line), "/")
	api := base + "/api"
	call := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, api+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	run := func(dir, req string) string {
		t.Helper()
		code, v := call("POST", "/sessions", `{"request_id": "`+req+`", "cwd": "`+dir+`"}`)
		if code != 201 {
			t.Fatalf("create in %s = %d %v", dir, code, v)
		}
		id := v["session_id"].(string)
		if code, v := call("POST", "/sessions/"+id+"/actions", `{"request_id": "go", "action": "submit", "text": "where are you?"}`); code != 200 {
			t.Fatalf("submit = %d %v", code, v)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, snap := call("GET", "/sessions/"+id, "")
			if snap["busy"] == false && snap["last_turn"] == "done" {
				if snap["cwd"] != dir {
					t.Errorf("snapshot cwd = %v, want %s", snap["cwd"], dir)
				}
				return id
			}
			if time.Now().After(deadline) {
				t.Fatalf("session in %s never finished: %v\n%s", dir, snap, stderr)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	idA, idB := run(a, "a"), run(b, "b")
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	for i, tt := range []struct{ dir, own, other string }{{a, "alpha", "beta"}, {b, "beta", "alpha"}} {
		first, second := reqs[2*i], reqs[2*i+1]
		sys := systemOf(t, first)
		if !strings.Contains(sys, "Guidance of "+tt.own+".") || strings.Contains(sys, "Guidance of "+tt.other) {
			t.Errorf("the system prompt of the session in %s lacks its own guidance, or has the other's:\n%s", tt.dir, sys)
		}
		if !strings.Contains(string(first.Body), "directory: "+tt.dir+" (") {
			t.Errorf("the runtime notes of the session in %s do not name it", tt.dir)
		}
		if !strings.Contains(string(second.Body), tt.dir+"\\n[exit status 0]") {
			t.Errorf("pwd in the session of %s printed elsewhere:\n%s", tt.dir, second.Body)
		}
	}
	// A second session in alpha: the same system prompt, byte for byte.
	code, v := call("POST", "/sessions", `{"request_id": "a2", "cwd": "`+a+`"}`)
	if code != 201 {
		t.Fatalf("create = %d %v", code, v)
	}
	idA2 := v["session_id"].(string)
	call("POST", "/sessions/"+idA2+"/actions", `{"request_id": "go", "action": "submit", "text": "again"}`)
	for deadline := time.Now().Add(30 * time.Second); len(srv.Requests()) < 5 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if got := srv.Requests(); len(got) < 5 || systemOf(t, got[4]) != systemOf(t, reqs[0]) {
		t.Errorf("two sessions in %s got different system prompts", a)
	}
	// Listing by directory.
	_, list := call("GET", "/sessions?cwd="+url.QueryEscape(a), "")
	if n := len(list["sessions"].([]any)); n != 2 {
		t.Errorf("?cwd=%s lists %d sessions, want 2", a, n)
	}

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sb strings.Builder
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			sb.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, sb.String()
	}
	for _, tt := range []struct{ id, dir, name string }{{idA, a, "alpha"}, {idB, b, "beta"}} {
		files := "/s/" + tt.id + "/files/"
		_, page := get("/s/" + tt.id + "/")
		href := regexp.MustCompile(`href="([^"]*/files/[^"]*)"`)
		var links []string
		for _, m := range href.FindAllStringSubmatch(page, -1) {
			links = append(links, m[1])
		}
		u, _ := url.Parse(base)
		want := []string{u.Path + files + "src/" + tt.name + ".go"}
		if !strings.Contains(strings.Join(links, " "), want[0]) || !strings.Contains(strings.Join(links, " "), "src/"+tt.name+".go?line=3#L3") {
			t.Errorf("the answer of the session in %s links %v, want its own %s", tt.dir, links, want)
		}
		if strings.Contains(page, "outside-"+tt.name+".txt\"") {
			t.Errorf("the answer links out of %s", tt.dir)
		}
		code, body := get(files + "src/" + tt.name + ".go?line=3")
		if code != 200 || !strings.Contains(body, `id="L3"`) || !strings.Contains(body, "package") {
			t.Errorf("the file of %s = %d", tt.dir, code)
		}
		for _, p := range []string{"../outside-" + tt.name + ".txt", "..%2foutside-" + tt.name + ".txt", "%2e%2e/outside-" + tt.name + ".txt", "escape.txt", "escape.txt?raw=1", ".git/HEAD"} {
			if code, body := get(files + p); code != 404 || strings.Contains(body, "TOP SECRET") || strings.Contains(body, "refs/heads") {
				t.Errorf("GET files/%s of %s = %d, want 404 and nothing read", p, tt.dir, code)
			}
		}
	}
}

// readLine reads one line of r.
func readLine(r interface{ Read([]byte) (int, error) }) (string, error) {
	var b strings.Builder
	one := make([]byte, 1)
	for {
		n, err := r.Read(one)
		if n == 1 {
			if one[0] == '\n' {
				return b.String(), nil
			}
			b.WriteByte(one[0])
		}
		if err != nil {
			return b.String(), err
		}
	}
}

// TestOneShotInADirectory: myco -p records the directory it runs in, its agent's bash
// starts there, and the agent creates a child through $MYCO_SERVER_URL by running the curl
// recipe of docs/browser.md verbatim: the -p process serves the API while it runs. The
// child works in the same directory and answers.
func TestOneShotInADirectory(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed: the recipe's client is an agent's curl (.ci/run installs it)")
	}
	doc, err := os.ReadFile("../../docs/browser.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(doc), "### With curl")
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(after)
	if m == nil {
		t.Fatal("docs/browser.md has no sh block under ### With curl")
	}
	script, _ := json.Marshal(map[string]any{"command": "pwd; " + m[1], "timeout_secs": 120})
	srv := fakemodel.New(t,
		fakemodel.Turn{Text: "Delegating.", ToolCalls: []fakemodel.ToolCall{{ID: "recipe", Name: "bash", Args: string(script)}}},
		fakemodel.Turn{Text: "42"}, // the child's answer
		fakemodel.Turn{Text: "The recipe printed: {{tool_result}}"})
	home := profileHome(t, "anthropic-messages", srv.URL, "")
	dir := filepath.Join(t.TempDir(), "proj")
	project(t, dir, "proj")
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), "-p", "Count the files in /etc through a child.")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=", "MYCO_SERVER_URL=http://127.0.0.1:1/wrong")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("myco -p: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	answer := stdout.String()
	lines := strings.Split(strings.TrimSpace(strings.TrimPrefix(answer, "The recipe printed: ")), "\n")
	if len(lines) != 7 || lines[0] != dir || lines[2] != "42" || lines[3] != "false" || lines[4] != "3" || lines[6] != "[exit status 0]" {
		t.Fatalf("the recipe printed %q, want pwd %s, then the acceptance, the child's 42, false, the count (this session, the recipe's parent and child), false\nstderr:\n%s", lines, dir, stderr.String())
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	if sys := systemOf(t, reqs[1]); !strings.Contains(sys, "Guidance of proj.") {
		t.Errorf("the child's system prompt lacks the directory's guidance")
	}
	list, err := sessions.NewStore(filepath.Join(home, "profiles", "default", "session")).List(t.Context())
	if err != nil || len(list) != 3 {
		t.Fatalf("sessions = %v, %v; want the -p session, the recipe's parent and its child", list, err)
	}
	for _, s := range list {
		if s.Cwd != dir {
			t.Errorf("session %s (parent %q) works in %q, want %s", s.ID, s.Parent, s.Cwd, dir)
		}
	}
}

// TestChatServesTheAPI: the terminal chat's tools get a MYCO_SERVER_URL of its own
// process, where its agent finds its own session and starts a child in its directory.
func TestChatServesTheAPI(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (.ci/run installs it)")
	}
	script := `set -e
api="$MYCO_SERVER_URL/api"
me=$(curl -sf "$api/sessions" | sed -n 's/^      "session_id": "\(.*\)",$/\1/p' | head -1)
curl -sf -X POST -H 'Content-Type: application/json' -d '{"request_id": "kid", "parent_session": "'"$me"'"}' "$api/sessions" | grep -c '"created": true'
curl -sf "$api/sessions/$me" | grep '"cwd"'`
	args, _ := json.Marshal(map[string]string{"command": script})
	srv := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "api", Name: "bash", Args: string(args)}}},
		fakemodel.Turn{Text: "The API said: {{tool_result}}"})
	home := profileHome(t, "anthropic-messages", srv.URL, "")
	chat := startChat(t, "MYCO_HOME="+home, "MYCO_SERVER_URL=")
	chat.say(t, srv, "Start a child.", 2)
	chat.quit(t)
	out := chat.stdout.String()
	if !strings.Contains(out, "The API said: 1\n") || !strings.Contains(out, `"cwd": "`+chat.cmd.Dir+`"`) {
		t.Fatalf("the chat's agent did not reach its API: %q\nstderr:\n%s", out, chat.stderr)
	}
	list, err := sessions.NewStore(filepath.Join(home, "profiles", "default", "session")).List(t.Context())
	if err != nil || len(list) != 2 {
		t.Fatalf("sessions = %v, %v; want the chat's and its child", list, err)
	}
	if kid, parent := list[0], list[1]; kid.Parent != parent.ID || !kid.Hidden {
		t.Errorf("sessions = %+v, want the chat's session and a hidden child of it", list)
	}
	for _, s := range list {
		if s.Cwd != chat.cmd.Dir {
			t.Errorf("session %s works in %q, want the chat's %s", s.ID, s.Cwd, chat.cmd.Dir)
		}
	}
}

// TestOneShotChildrenEndWithIt: a child that a -p agent started and left running is
// stopped when the -p process ends, and saved so: its turn ends stopped (shutdown), its
// running call is an unknown outcome, and its process is gone.
func TestOneShotChildrenEndWithIt(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (.ci/run installs it)")
	}
	marker := filepath.Join(t.TempDir(), "child-sleep")
	script := `set -e
api="$MYCO_SERVER_URL/api"
j='Content-Type: application/json'
me=$(curl -sf "$api/sessions" | sed -n 's/^      "session_id": "\(.*\)",$/\1/p' | head -1)
kid=$(curl -sf -X POST -H "$j" -d '{"request_id": "kid", "parent_session": "'"$me"'"}' "$api/sessions" | sed -n 's/^  "session_id": "\(.*\)",$/\1/p')
curl -sf -X POST -H "$j" -d '{"request_id": "t", "action": "submit", "text": "sleep"}' "$api/sessions/$kid/actions" >/dev/null
for i in $(seq 300); do curl -sf "$api/sessions/$kid" | grep -q '"status": "running"' && break; sleep 0.1; done
echo "left $kid running"`
	args, _ := json.Marshal(map[string]string{"command": script})
	sleep, _ := json.Marshal(map[string]string{"command": "exec -a " + marker + " sleep 60"})
	srv := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "spawn", Name: "bash", Args: string(args)}}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "nap", Name: "bash", Args: string(sleep)}}}, // the child's
		fakemodel.Turn{Text: "{{tool_result}}"})
	home := profileHome(t, "anthropic-messages", srv.URL, "")
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), "-p", "Start a child and leave it running.")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "left ") {
		t.Fatalf("myco -p: %v\n%s", err, out)
	}
	store := sessions.NewStore(filepath.Join(home, "profiles", "default", "session"))
	list, err := store.List(t.Context())
	if err != nil || len(list) != 2 || list[0].Parent == "" {
		t.Fatalf("sessions = %+v, %v", list, err)
	}
	kid, err := store.Load(t.Context(), list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	ends := kid.Latest().Ends()
	if len(ends) != 1 || ends[0].Status != sessions.TurnCancelled || ends[0].Code != "shutdown" {
		t.Errorf("the child's turn ended %+v, want cancelled by the shutdown", ends)
	}
	if ps, _ := exec.Command("pgrep", "-f", marker).Output(); len(ps) > 0 {
		t.Errorf("the child's sleep outlived the -p process: pids %s", ps)
	}
}
