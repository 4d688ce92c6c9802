package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"myco.dev/api"
	"myco.dev/internal/fakemodel"
	"myco.dev/sessions"
)

// addProfile writes profile name's config, a model served by url, under home.
func addProfile(t *testing.T, home, name, model, url string) {
	t.Helper()
	dir := filepath.Join(home, "profiles", name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "[models." + model + "]\nprotocol = \"anthropic-messages\"\nbase_url = \"" + url + "\"\ncontext_window = 100000\n" +
		"[approvals]\nmode = \"full\"\n" // these tests' commands write their pid outside the session's directory
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// apiClient talks to one instance's API through the supervisor.
type apiClient struct {
	t    *testing.T
	base string // http://127.0.0.1:PORT/profiles/NAME/api
}

func (c apiClient) post(path, body string) (int, map[string]any) {
	resp, err := http.Post(c.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (c apiClient) get(path string) (int, map[string]any) {
	resp, err := http.Get(c.base + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// run creates a session, submits text and waits for the turn's end; it returns the
// session id and its last snapshot.
func (c apiClient) run(req, text string) (string, map[string]any) {
	c.t.Helper()
	code, out := c.post("/sessions", `{"request_id":"`+req+`"}`)
	if code != 201 {
		c.t.Fatalf("create = %d %v", code, out)
	}
	id := out["session_id"].(string)
	if code, out := c.post("/sessions/"+id+"/actions", `{"request_id":"`+req+`-s","action":"submit","text":"`+text+`"}`); code != 200 {
		c.t.Fatalf("submit = %d %v", code, out)
	}
	return id, c.wait(id)
}

func (c apiClient) wait(id string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, snap := c.get("/sessions/" + id)
		if snap["busy"] == false && snap["last_turn"] != "" {
			return snap
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("session %s stayed busy: %v", id, snap)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// status reads the supervisor's /status.
func status(t testing.TB, root string) map[string]any {
	resp, err := http.Get(root + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return out
}

func workerPID(t testing.TB, root, profile string) int {
	t.Helper()
	for _, p := range status(t, root)["profiles"].([]any) {
		m := p.(map[string]any)
		if m["profile"] == profile && m["running"] == true {
			return int(m["pid"].(float64))
		}
	}
	t.Fatalf("no running worker for %s: %v", profile, status(t, root))
	return 0
}

// TestProfilesOnOnePort serves two profiles with their own catalogs at once, each
// answering with its own model; a profile whose config is broken shows its error on its
// pages (see TestBrokenConfig) while the others work; unknown and malformed names are 404; a new profile
// directory is served without a restart.
func TestProfilesOnOnePort(t *testing.T) {
	work := fakemodel.New(t, fakemodel.Turn{Text: "work says hi"})
	home := profileHome(t, "anthropic-messages", "", "")
	addProfile(t, home, "default", "personal-model", fakemodel.New(t, fakemodel.Turn{Text: "personal says hi"}).URL)
	addProfile(t, home, "work", "work-model", work.URL)
	broken := filepath.Join(home, "profiles", "broken")
	os.MkdirAll(broken, 0o700)
	os.WriteFile(filepath.Join(broken, "config.toml"), []byte("[models.x]\nprotocol = \"nope\"\n"), 0o600)
	_, u, stderr := startServer(t, home)
	root := strings.TrimSuffix(u, "/profiles/default/")

	_, snap := apiClient{t, root + "/profiles/default/api"}.run("a", "hi")
	if snap["answer"] != "personal says hi" || snap["model"] != "personal-model" {
		t.Errorf("default profile: %v", snap)
	}
	_, snap = apiClient{t, root + "/profiles/work/api"}.run("a", "hi")
	if snap["answer"] != "work says hi" || snap["model"] != "work-model" {
		t.Errorf("work profile: %v", snap)
	}
	resp, err := http.Get(root + "/profiles/broken/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), filepath.Join(broken, "config.toml")) || !strings.Contains(string(body), "nope") {
		t.Errorf("broken profile: %d\n%s\nwant its pages, showing its config and the error (stderr:\n%s)", resp.StatusCode, body, stderr)
	}
	if _, snap := (apiClient{t, root + "/profiles/work/api"}).get("/sessions"); len(snap["sessions"].([]any)) != 1 {
		t.Errorf("work still answers: %v", snap)
	}
	for _, path := range []string{"/profiles/nobody/", "/profiles/a.b/", "/profiles/..%2f/", "/profiles/%00/"} {
		resp, err := http.Get(root + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("GET %s = %d, want 404", path, resp.StatusCode)
		}
	}
	late := fakemodel.New(t, fakemodel.Turn{Text: "late says hi"})
	addProfile(t, home, "late", "late-model", late.URL)
	if _, snap := (apiClient{t, root + "/profiles/late/api"}).run("a", "hi"); snap["answer"] != "late says hi" {
		t.Errorf("a profile added while serving: %v", snap)
	}
	// One keep-alive connection for everything: the first request hands it to a worker,
	// which sends the others back (307, connection closed) to be routed anew.
	one := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	for _, tt := range []struct{ path, want string }{
		{"/profiles/default/api/sessions", `"session_id"`}, {"/profiles/work/api/sessions", `"session_id"`},
		{"/status", `"event_streams"`}, {"/profiles/late/api/sessions", `"session_id"`}, {"/profiles/default/", "<!doctype html>"},
	} {
		resp, err := one.Get(root + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), tt.want) {
			t.Errorf("GET %s on a shared connection = %d %.200s", tt.path, resp.StatusCode, b)
		}
	}
	// the pages switch between the profiles
	resp, _ = http.Get(root + "/profiles/work/")
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, p := range []string{"default", "work", "late"} {
		if !strings.Contains(string(page), `href="/profiles/`+p+`/"`) {
			t.Errorf("the work profile's page does not link to profile %s", p)
		}
	}
}

// TestProfileWorkerCrash kills one profile's worker in the middle of a turn while another
// profile streams to an open client: the other keeps streaming, and the killed profile
// comes back on the next request with its session recovered (the interrupted call has an
// unknown outcome). A worker that keeps crashing is started again only after a pause, and
// its pages say so.
func TestProfileWorkerCrash(t *testing.T) {
	dir := t.TempDir()
	slow := fakemodel.New(t, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"echo $$ > ` + dir + `/pid; sleep 300"}`}}})
	steady := fakemodel.New(t)
	steady.Loop()
	steady.Script(fakemodel.Turn{Text: "tick", DelayMs: 20, ChunkSize: 1})
	home := profileHome(t, "anthropic-messages", "", "")
	addProfile(t, home, "default", "m", steady.URL)
	addProfile(t, home, "doomed", "m", slow.URL)
	_, u, _ := startServer(t, home)
	root := strings.TrimSuffix(u, "/profiles/default/")
	calm := apiClient{t, root + "/profiles/default/api"}
	doomed := apiClient{t, root + "/profiles/doomed/api"}

	// An open client of the calm profile's events.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", calm.base+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 1024)
	go func() {
		defer close(events)
		rd := api.NewSSEReader(resp.Body)
		for {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			events <- ev.Data
		}
	}()

	_, out := doomed.post("/sessions", `{"request_id":"d1"}`)
	did := out["session_id"].(string)
	doomed.post("/sessions/"+did+"/actions", `{"request_id":"d1-s","action":"submit","text":"sleep"}`)
	tool := waitPID(t, filepath.Join(dir, "pid"), time.Now().Add(20*time.Second))
	pid := workerPID(t, root, "doomed")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The calm profile streams a whole turn after the crash.
	_, calmSnap := calm.run("c1", "go")
	if calmSnap["answer"] != "tick" {
		t.Errorf("calm profile after the crash: %v", calmSnap)
	}
	seen := false
	for !seen {
		select {
		case d, ok := <-events:
			if !ok {
				t.Fatal("the calm profile's event stream ended with the other's crash")
			}
			seen = strings.Contains(d, `"type":"done"`)
		case <-time.After(20 * time.Second):
			t.Fatal("no done event on the calm profile's open stream")
		}
	}
	waitEnded(t, "the killed worker's tool", time.Now().Add(15*time.Second), tool)
	// The doomed profile comes back with its session recovered.
	code, snap := doomed.get("/sessions/" + did)
	if code != 200 || snap["busy"] != false {
		t.Fatalf("after the crash: %d %v", code, snap)
	}
	msgs := snap["messages"].([]any)
	call := msgs[len(msgs)-1].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	if call["status"] != "unknown" {
		t.Errorf("the interrupted call = %v, want an unknown outcome", call)
	}
	if workerPID(t, root, "doomed") == pid {
		t.Error("the worker was not restarted")
	}
	// A second crash soon after: the next start waits, and the page says so.
	syscall.Kill(workerPID(t, root, "doomed"), syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); ; {
		down := false
		for _, p := range status(t, root)["profiles"].([]any) {
			m := p.(map[string]any)
			down = down || m["profile"] == "doomed" && m["running"] == false
		}
		if down || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp2, err := http.Get(root + "/profiles/doomed/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	if resp2.StatusCode != 503 || resp2.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "crashed") {
		t.Errorf("a crash-looping profile = %d (Retry-After %q):\n%s", resp2.StatusCode, resp2.Header.Get("Retry-After"), body)
	}
}

// TestWorkerKilledMidRequest: a request that waits on a worker (a submit with wait, its
// model hanging) when the worker is killed with SIGKILL is answered 502 worker_failed, in
// the API's envelope, as docs/browser.md promises, and its connection closed: whether it
// was the request that handed the connection to the worker or a later one on the same
// kept-alive connection. The connection was the worker's alone and closed with it.
func TestWorkerKilledMidRequest(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Turn{HangMs: 60000, Text: "late"}, fakemodel.Turn{HangMs: 60000, Text: "late"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	_, u, stderr := startServer(t, home)
	root := strings.TrimSuffix(u, "/profiles/default/")
	addr := strings.TrimPrefix(root, "http://")
	api := apiClient{t, root + "/profiles/default/api"}
	_, out := api.post("/sessions", `{"request_id":"s"}`)
	id, _ := out["session_id"].(string)
	for i, tt := range []struct {
		name  string
		first string // a request answered on the connection before the slow one, if any
	}{
		{"the request that handed the connection over", ""},
		{"a later request on a kept-alive connection", "GET /profiles/default/api/sessions HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(c)
			if tt.first != "" {
				io.WriteString(c, tt.first)
				resp, err := http.ReadResponse(br, nil)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("the first request: %v, %v", resp, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			asked := len(fake.Requests())
			body := fmt.Sprintf(`{"request_id":"slow-%d","action":"submit","text":"hang","wait":true}`, i)
			fmt.Fprintf(c, "POST /profiles/default/api/sessions/%s/actions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				id, addr, len(body), body)
			for deadline := time.Now().Add(20 * time.Second); len(fake.Requests()) == asked; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the model was never asked\nstderr:\n%s", stderr)
				}
			}
			pid := workerPID(t, root, "default")
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("the waiting request got no answer: %v\nstderr:\n%s", err, stderr)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), `"code": "worker_failed"`) || !resp.Close {
				t.Errorf("the waiting request = %d (close %v) %s; want 502 worker_failed, the connection closed", resp.StatusCode, resp.Close, b)
			}
			// The worker is seen gone before the next case starts it again.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				running := false
				for _, p := range status(t, root)["profiles"].([]any) {
					m := p.(map[string]any)
					running = running || m["profile"] == "default" && m["running"] == true && int(m["pid"].(float64)) == pid
				}
				if !running {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the killed worker is still listed as running")
				}
			}
		})
	}
}

// TestSupervisorStopCleansUp stops the server with SIGTERM during a turn: no worker or tool
// process is left, every session lock is free, and the turn is saved cancelled. The server
// makes nothing in $TMPDIR: its workers are reached over channels they inherit.
func TestSupervisorStopCleansUp(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	slow := fakemodel.New(t, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"echo $$ > ` + dir + `/pid; sleep 300"}`}}})
	home := profileHome(t, "anthropic-messages", "", "")
	addProfile(t, home, "default", "m", slow.URL)
	addProfile(t, home, "other", "m", slow.URL)
	cmd, u, stderr := startServer(t, home)
	root := strings.TrimSuffix(u, "/profiles/default/")
	c := apiClient{t, root + "/profiles/default/api"}
	apiClient{t, root + "/profiles/other/api"}.get("/sessions") // start the second worker too
	_, out := c.post("/sessions", `{"request_id":"s"}`)
	id := out["session_id"].(string)
	c.post("/sessions/"+id+"/actions", `{"request_id":"s-s","action":"submit","text":"sleep"}`)
	tool := waitPID(t, filepath.Join(dir, "pid"), time.Now().Add(20*time.Second))
	workers := []int{workerPID(t, root, "default"), workerPID(t, root, "other")}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("the server made %v in $TMPDIR; want nothing there", ents)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit = %v\n%s", err, stderr)
	}
	waitEnded(t, "after the server stopped", time.Now().Add(15*time.Second), append(workers, tool)...)
	store := sessions.NewStore(filepath.Join(home, "profiles", "default", "session"))
	if holder, held := store.Holder(id); held {
		t.Errorf("the session's lock is still held by %s", holder)
	}
	sess, err := store.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Latest().LastTurn() != sessions.TurnCancelled {
		t.Errorf("the turn ended %q, want cancelled", sess.Latest().LastTurn())
	}
}

// TestSupervisorKilled (issue 20): when the supervisor dies by SIGKILL during a turn, its
// worker notices (its stdin closes), is not killed by SIGPIPE writing its log to the dead
// supervisor's pipe, saves the running turn as cancelled, ends its tool and exits.
func TestSupervisorKilled(t *testing.T) {
	dir := t.TempDir()
	slow := fakemodel.New(t, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"echo $$ > ` + dir + `/pid; sleep 300"}`}}})
	home := profileHome(t, "anthropic-messages", slow.URL, "")
	cmd, u, _ := startServer(t, home)
	root := strings.TrimSuffix(u, "/profiles/default/")
	c := apiClient{t, root + "/profiles/default/api"}
	_, out := c.post("/sessions", `{"request_id":"s"}`)
	id := out["session_id"].(string)
	c.post("/sessions/"+id+"/actions", `{"request_id":"s-s","action":"submit","text":"sleep"}`)
	tool := waitPID(t, filepath.Join(dir, "pid"), time.Now().Add(20*time.Second))
	worker := workerPID(t, root, "default")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitEnded(t, "after the supervisor was killed", time.Now().Add(15*time.Second), worker, tool)
	sess, err := sessions.NewStore(filepath.Join(home, "profiles", "default", "session")).Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if th := sess.Latest(); th.LastTurn() != sessions.TurnCancelled {
		t.Errorf("the running turn ended %q (interrupted: %v), want cancelled: the worker died before it saved", th.LastTurn(), th.Interrupted())
	}
}

// TestBrokenConfig (issue 20): while a profile's config is invalid, its worker still serves
// its session list, its transcripts and its workspace viewer, every page showing the config
// error, and refuses what needs a model with 503 config_invalid; once the config is fixed,
// the next request gets the full server, without a restart.
func TestBrokenConfig(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Turn{Text: "first"}, fakemodel.Turn{Text: "after the fix"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	cfg := filepath.Join(home, "profiles", "default", "config.toml")
	good, _ := os.ReadFile(cfg)
	cmd, u, _ := startServer(t, home)
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	id, _ := c.run("a", "hello")
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	os.WriteFile(filepath.Join(home, "profiles", "default", "workspace", "notes.md"), []byte("# Notes\n"), 0o600)
	os.WriteFile(cfg, []byte("[models.m]\nprotocol = \"nope\"\n"), 0o600)

	_, u, _ = startServer(t, home)
	c = apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	for _, path := range []string{"", "s/" + id + "/", "workspace/"} {
		resp, err := http.Get(u + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), cfg) || !strings.Contains(string(body), "config is invalid") {
			t.Errorf("GET %s with a broken config = %d; want the page, showing the config error", path, resp.StatusCode)
		}
		if path == "workspace/" && !strings.Contains(string(body), "notes.md") {
			t.Errorf("the workspace viewer does not list notes.md")
		}
		if path == "s/"+id+"/" && !strings.Contains(string(body), "first") {
			t.Errorf("the transcript is not shown")
		}
	}
	if _, list := c.get("/sessions"); len(list["sessions"].([]any)) != 1 {
		t.Errorf("the session list = %v", list)
	}
	for _, tt := range []struct{ path, body string }{
		{"/sessions/" + id + "/actions", `{"request_id":"s","action":"submit","text":"hi"}`},
		{"/sessions", `{"request_id":"n"}`},
	} {
		code, out := c.post(tt.path, tt.body)
		if ec, msg := apiErr(out); code != 503 || ec != "config_invalid" || !strings.Contains(msg, cfg) {
			t.Errorf("POST %s with a broken config = %d %v, want 503 config_invalid naming the config", tt.path, code, out)
		}
	}
	os.WriteFile(cfg, good, 0o600)
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out := c.post("/sessions/"+id+"/actions", `{"request_id":"s2","action":"submit","text":"again"}`)
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the fix: %d %v", code, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if snap := c.wait(id); snap["answer"] != "after the fix" {
		t.Errorf("after the fix: %v", snap)
	}
}

// TestConfigChangeIsPickedUp (issue 18, issue 28): a changed config.toml is loaded by the
// running server, without a restart: a new model is usable while a turn runs, and the turn
// is not disturbed; a change that breaks the config leaves the last good one serving, its
// error on the pages.
func TestConfigChangeIsPickedUp(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "go")
	fake := fakemodel.New(t,
		fakemodel.Turn{Text: "first"},
		// The turn runs until the test has seen the new model usable (at most 20 s).
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "bash", Args: `{"command":"for i in $(seq 200); do [ -e ` + gate + ` ] && break; sleep 0.1; done"}`}}},
		fakemodel.Turn{Text: "slept"},
		fakemodel.Turn{Text: "on the broken config's predecessor"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	cfg := filepath.Join(home, "profiles", "default", "config.toml")
	good, _ := os.ReadFile(cfg)
	_, u, stderr := startServer(t, home)
	t.Cleanup(func() {
		os.WriteFile(gate, nil, 0o600)
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr)
		}
	})
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	id, _ := c.run("a", "hello")
	page := func() string {
		resp, err := http.Get(u + "s/" + id + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
		}
	}
	withModel := func(name string) []byte {
		return append(append([]byte("model = \"m\"\n"), good...), []byte("\n[models."+name+"]\nprotocol = \"anthropic-messages\"\nbase_url = \""+fake.URL+"\"\ncontext_window = 1000\n")...)
	}

	// A change while a turn runs is in use at once, and the turn goes on.
	if code, out := c.post("/sessions/"+id+"/actions", `{"request_id":"b","action":"submit","text":"sleep"}`); code != 200 {
		t.Fatalf("submit = %d %v", code, out)
	}
	// The server looks at the file at most once a second, when a request comes.
	os.WriteFile(cfg, withModel("m2"), 0o600)
	until("the new model is in the catalog", func() bool {
		code, _ := c.post("/sessions", `{"request_id":"m2","model":"m2"}`)
		return code == 201
	})
	if _, snap := c.get("/sessions/" + id); snap["busy"] != true {
		t.Errorf("the turn had ended when the new model was usable: %v", snap)
	}
	if p := page(); strings.Contains(p, "takes effect once") {
		t.Errorf("the page says the change waits, while it is in use")
	}
	os.WriteFile(gate, nil, 0o600)
	if snap := c.wait(id); snap["answer"] != "slept" || snap["last_turn"] != "done" {
		t.Fatalf("the running turn was disturbed by the change: %v", snap)
	}

	// A broken change leaves the last good config serving.
	os.WriteFile(cfg, []byte("[models.m]\nprotocol = \"nope\"\n"), 0o600)
	until("the pages show the broken config's error", func() bool {
		p := page()
		return strings.Contains(p, "the last good config keeps serving") && strings.Contains(p, "nope")
	})
	if code, out := c.post("/sessions/"+id+"/actions", `{"request_id":"c","action":"submit","text":"still there?"}`); code != 200 {
		t.Fatalf("a submit under the last good config = %d %v", code, out)
	}
	if snap := c.wait(id); snap["answer"] != "on the broken config's predecessor" {
		t.Errorf("under the last good config: %v", snap)
	}
}
