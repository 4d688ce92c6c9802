package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/web"
	"myco.dev/sessions"
	"myco.dev/sessions/sessionstest"
	"myco.dev/static"
)

// call sends a JSON request to the API and decodes the answer.
func (ts *testServer) call(t testing.TB, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var raw string
	switch b := body.(type) {
	case nil:
	case string:
		raw = b
	default:
		j, _ := json.Marshal(b)
		raw = string(j)
	}
	req, _ := http.NewRequest(method, ts.URL+"/profiles/default/api"+path, strings.NewReader(raw))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: Content-Type %q, want application/json", method, path, ct)
	}
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, out
}

func errCode(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// waitAPIIdle polls a session's snapshot until busy is false, as a parent agent does.
func (ts *testServer) waitAPIIdle(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, snap := ts.call(t, "GET", "/sessions/"+id, nil)
		if snap["busy"] == false {
			return snap
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s stayed busy: %v", id, snap)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAPIErrors: every malformed request gets its stable code and a sentence.
func TestAPIErrors(t *testing.T) {
	ts := newTestServer(t)
	id, _ := ts.session(t)
	for _, tt := range []struct {
		name, method, path string
		body               any
		ctype              string
		code               int
		want               string
	}{
		{"no request id", "POST", "/sessions", map[string]any{}, "", 400, "missing_field"},
		{"unknown field", "POST", "/sessions", map[string]any{"request_id": "r", "colour": "red"}, "", 400, "unknown_field"},
		{"bad json", "POST", "/sessions", `{"request_id": `, "", 400, "invalid_json"},
		{"two values", "POST", "/sessions", `{"request_id":"a"}{}`, "", 400, "invalid_json"},
		{"wrong type", "POST", "/sessions", `{"request_id": 7}`, "", 400, "invalid_field"},
		{"field name case", "POST", "/sessions", `{"Request_ID": "r9"}`, "", 400, "unknown_field"},
		{"duplicate field", "POST", "/sessions", `{"request_id": "r9", "request_id": "r10"}`, "", 400, "duplicate_field"},
		{"request id not utf-8", "POST", "/sessions", "{\"request_id\": \"r\xff\"}", "", 400, "invalid_field"},
		{"action duplicate", "POST", "/sessions/" + id + "/actions", `{"request_id": "r", "action": "archive", "action": "restore"}`, "", 400, "duplicate_field"},
		{"not json", "POST", "/sessions", `request_id=r`, "application/x-www-form-urlencoded", 415, "unsupported_media_type"},
		{"too large", "POST", "/sessions", `{"request_id":"` + strings.Repeat("x", 2<<20) + `"}`, "", 413, "too_large"},
		{"unknown model", "POST", "/sessions", map[string]any{"request_id": "r1", "model": "nope"}, "", 400, "unknown_model"},
		{"unknown parent", "POST", "/sessions", map[string]any{"request_id": "r2", "parent_session": "20260101-000000-abcdef"}, "", 404, "parent_not_found"},
		{"fork without parent", "POST", "/sessions", map[string]any{"request_id": "r3", "fork": true}, "", 400, "invalid_field"},
		{"unknown session", "GET", "/sessions/nope", nil, "", 404, "not_found"},
		{"unknown session action", "POST", "/sessions/20260101-000000-abcdef/actions", map[string]any{"request_id": "r", "action": "archive"}, "", 404, "not_found"},
		{"no action", "POST", "/sessions/" + id + "/actions", map[string]any{"request_id": "r"}, "", 400, "missing_field"},
		{"unknown action", "POST", "/sessions/" + id + "/actions", map[string]any{"request_id": "r", "action": "explode"}, "", 400, "unknown_action"},
		{"submit without text", "POST", "/sessions/" + id + "/actions", map[string]any{"request_id": "r", "action": "submit"}, "", 400, "missing_field"},
		{"title without title", "POST", "/sessions/" + id + "/actions", map[string]any{"request_id": "r", "action": "set_title"}, "", 400, "missing_field"},
		{"model unknown", "POST", "/sessions/" + id + "/actions", map[string]any{"request_id": "r", "action": "select_model", "model": "x"}, "", 400, "unknown_model"},
		{"bad limit", "GET", "/sessions/" + id + "?limit=0", nil, "", 400, "invalid_field"},
		{"bad filter", "GET", "/sessions?archived=maybe", nil, "", 400, "invalid_field"},
		{"no endpoint", "GET", "/nope", nil, "", 404, "not_found"},
		{"wrong method", "DELETE", "/sessions", nil, "", 405, "method_not_allowed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var raw string
			switch b := tt.body.(type) {
			case string:
				raw = b
			case nil:
			default:
				j, _ := json.Marshal(b)
				raw = string(j)
			}
			req, _ := http.NewRequest(tt.method, ts.URL+"/profiles/default/api"+tt.path, strings.NewReader(raw))
			ct := tt.ctype
			if ct == "" && tt.body != nil {
				ct = "application/json"
			}
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out map[string]any
			json.NewDecoder(resp.Body).Decode(&out)
			e, _ := out["error"].(map[string]any)
			if resp.StatusCode != tt.code || errCode(out) != tt.want || e["message"] == "" {
				t.Errorf("%s %s = %d %v, want %d %s with a message", tt.method, tt.path, resp.StatusCode, out, tt.code, tt.want)
			}
		})
	}
}

// TestAPICreateIdempotent: the same request_id answers the same session, also through a
// new session service over the same store (a server restart).
func TestAPICreateIdempotent(t *testing.T) {
	ts := newTestServer(t)
	code, first := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "r1", "title": "first"})
	if code != 201 || first["created"] != true || first["session_id"] == "" {
		t.Fatalf("create = %d %v", code, first)
	}
	code, again := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "r1", "title": "first"})
	if code != 200 || again["session_id"] != first["session_id"] || again["created"] != false {
		t.Errorf("retried create = %d %v, want the same session", code, again)
	}
	restarted := sessionstest.Manager(t, sessions.ManagerOptions{Store: sessions.NewStore(ts.mgr.Store().Dir())})
	id, created, err := restarted.CreateRequest(t.Context(), "r1", sessions.CreateOptions{Title: "first"})
	if err != nil || created || id != first["session_id"] {
		t.Errorf("after a restart: %q %v %v, want the same session", id, created, err)
	}
	if list, _ := ts.mgr.List(t.Context(), sessionsAll()); len(list) != 1 {
		t.Errorf("%d sessions, want 1", len(list))
	}
}

// TestAPISubmitAndSnapshot submits a task, sees busy until the answer, pages the messages
// back and reads the usage; a retried submit answers the first acceptance and submits
// nothing; a submit while busy is refused with busy.
func TestAPISubmitAndSnapshot(t *testing.T) {
	release := make(chan struct{})
	ts := newTestServer(t,
		fakemodel.Turn{Text: "checking", ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "work", Args: `{"n":1}`}}, Usage: fakemodel.Usage{Input: 1200, Output: 30}},
		// 400 prompt tokens and 900 read from the cache: the context holds 1,300.
		fakemodel.Turn{Text: "the answer is 42", Usage: fakemodel.Usage{Input: 400, CacheRead: 900, Output: 10}})
	ts.tools.f = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return model.ToolResult{CallID: c.ID, Text: "worked"}
	}
	_, created := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c"})
	id := created["session_id"].(string)
	code, acc := ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s1", "action": "submit", "text": "what is it?"})
	if code != 200 || acc["accepted_at"] == nil || acc["repeat"] != false {
		t.Fatalf("submit = %d %v", code, acc)
	}
	code, again := ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s1", "action": "submit", "text": "what is it?"})
	if code != 200 || again["accepted_at"] != acc["accepted_at"] || again["repeat"] != true {
		t.Errorf("retried submit = %d %v, want the first acceptance", code, again)
	}
	code, busy := ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s2", "action": "submit", "text": "more"})
	if code != 409 || errCode(busy) != "busy" {
		t.Errorf("submit while busy = %d %v, want 409 busy", code, busy)
	}
	_, snap := ts.call(t, "GET", "/sessions/"+id, nil)
	if snap["busy"] != true || snap["job"] != "turn" {
		t.Errorf("snapshot while working = %v", snap)
	}
	close(release)
	snap = ts.waitAPIIdle(t, id)
	if snap["answer"] != "the answer is 42" || snap["last_turn"] != "done" || snap["active_thread"] != "t1" {
		t.Errorf("final snapshot = %v", snap)
	}
	if u := snap["usage"].(map[string]any); u["user"] != "USER 1300/100000" {
		t.Errorf("usage = %v, want cached tokens counted once", u)
	}
	if _, page := ts.do(t, "GET", "/profiles/default/s/"+id+"/", nil, nil); !strings.Contains(page, "1.3k of 100k tokens (1%)") {
		t.Errorf("the page's meter does not read 1.3k of 100k tokens (1%%)")
	}
	msgs := snap["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("messages = %v, want the input, the call and the answer", msgs)
	}
	call := msgs[1].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	if call["status"] != "ok" || call["output"] != "worked" || call["name"] != "work" {
		t.Errorf("tool call = %v", call)
	}
	_, page := ts.call(t, "GET", "/sessions/"+id+"?limit=1", nil)
	if got := page["messages"].([]any); len(got) != 1 || page["next_before"] == nil {
		t.Fatalf("a page of one = %v", page)
	}
	_, back := ts.call(t, "GET", "/sessions/"+id+"?limit=1&before="+jsonNum(page["next_before"]), nil)
	if got := back["messages"].([]any); len(got) != 1 || got[0].(map[string]any)["text"] != "checking" {
		t.Errorf("the page before = %v", back)
	}
	sess, _, _ := ts.mgr.Snapshot(t.Context(), id)
	n := 0
	for _, e := range sess.Latest().Entries {
		if e.AcceptedAt != nil {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d accepted inputs, want 1", n)
	}
}

func jsonNum(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestAPIActions: select_model, set_title, archive, restore and compact, each idempotent
// by request id.
func TestAPIActions(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "hi"}, fakemodel.Turn{Text: "## Goal\nsummary"})
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c"})
	id := c["session_id"].(string)
	act := func(req map[string]any) (int, map[string]any) {
		return ts.call(t, "POST", "/sessions/"+id+"/actions", req)
	}
	if code, out := act(map[string]any{"request_id": "a1", "action": "select_model", "model": "other"}); code != 200 || out["result"] != "other" {
		t.Errorf("select_model = %d %v", code, out)
	}
	if code, out := act(map[string]any{"request_id": "a2", "action": "set_title", "title": "Child work"}); code != 200 || out["result"] != "Child work" {
		t.Errorf("set_title = %d %v", code, out)
	}
	act(map[string]any{"request_id": "a3", "action": "archive"})
	_, snap := ts.call(t, "GET", "/sessions/"+id, nil)
	if snap["model"] != "other" || snap["title"] != "Child work" || snap["archived"] != true {
		t.Errorf("after the actions: %v", snap)
	}
	// a3 again does nothing: restore with a3 would be a repeat of the archive
	if code, out := act(map[string]any{"request_id": "a3", "action": "archive"}); code != 200 || out["repeat"] != true {
		t.Errorf("repeated archive = %d %v", code, out)
	}
	act(map[string]any{"request_id": "a4", "action": "restore"})
	act(map[string]any{"request_id": "a5", "action": "select_model", "model": "fake"})
	act(map[string]any{"request_id": "s", "action": "submit", "text": "hello"})
	ts.waitAPIIdle(t, id)
	if code, out := act(map[string]any{"request_id": "a6", "action": "compact"}); code != 200 || out["result"] != "started" {
		t.Fatalf("compact = %d %v", code, out)
	}
	snap = ts.waitAPIIdle(t, id)
	if snap["active_thread"] != "t2" || snap["archived"] != false {
		t.Errorf("after compact: %v", snap)
	}
}

// TestAPICancel stops a turn during a tool call and during a retry wait.
func TestAPICancel(t *testing.T) {
	ts, started := newStuckServer(t)
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c"})
	id := c["session_id"].(string)
	ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s", "action": "submit", "text": "go"})
	<-started
	code, out := ts.call(t, "POST", "/sessions/"+id+"/cancel", nil)
	if code != 200 || out["session_id"] != id || out["stopped"] != true {
		t.Fatalf("cancel = %d %v", code, out)
	}
	snap := ts.waitAPIIdle(t, id)
	if le, _ := snap["last_error"].(map[string]any); snap["last_turn"] != "stopped" || le["code"] != "stopped" {
		t.Errorf("after cancel: %v", snap)
	}
	if code, out := ts.call(t, "POST", "/sessions/"+id+"/cancel", map[string]any{"request_id": "x"}); code != 200 || out["stopped"] != false {
		t.Errorf("cancel of an idle session = %d %v", code, out)
	}
}

// TestAPICancelRetryWait stops a turn that waits to retry an overloaded gateway.
func TestAPICancelRetryWait(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "busy", RetryAfter: "30"})
	ts.retry(t, 3)
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c"})
	id := c["session_id"].(string)
	ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s", "action": "submit", "text": "go"})
	deadline := time.Now().Add(10 * time.Second)
	for len(ts.fake.Requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	if code, out := ts.call(t, "POST", "/sessions/"+id+"/cancel", nil); code != 200 || out["stopped"] != true {
		t.Fatalf("cancel = %d %v", code, out)
	}
	snap := ts.waitAPIIdle(t, id)
	if d := time.Since(start); d > 5*time.Second || snap["last_turn"] != "stopped" {
		t.Errorf("the retry wait ended after %v as %v, want at once and stopped", d, snap["last_turn"])
	}
}

// TestAPIEvents streams JSON events: each with its id, replayable by Last-Event-ID, a reset
// for an unknown cursor, a ping when idle.
func TestAPIEvents(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "streamed answer"})
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c"})
	id := c["session_id"].(string)
	cursor := ts.mgr.EventID()
	s := ts.stream(t, "/profiles/default/api/events?session="+id+"&after="+cursor, nil)
	ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s", "action": "submit", "text": "go"})
	var evs []sseEvent
	var types []string
	for {
		ev := s.next(t)
		var u map[string]any
		if err := json.Unmarshal([]byte(ev.data), &u); err != nil {
			t.Fatalf("event data is not JSON: %q", ev.data)
		}
		if u["type"] == "ping" {
			continue
		}
		if ev.id == "" || u["session"] != id {
			t.Fatalf("event %+v lacks its id or session", ev)
		}
		evs = append(evs, ev)
		if typ := u["type"].(string); len(types) == 0 || types[len(types)-1] != typ {
			types = append(types, typ)
		}
		if u["type"] == "state" && u["busy"] == false {
			break
		}
	}
	want := []string{"state", "meta", "accepted", "text_delta", "step", "checkpoint", "done", "state"}
	if strings.Join(types, " ") != strings.Join(want, " ") {
		t.Errorf("event types = %v, want %v", types, want)
	}
	// replay from the third event
	again := ts.stream(t, "/profiles/default/api/events?session="+id, http.Header{"Last-Event-ID": {evs[2].id}})
	for _, want := range evs[3:] {
		if got := again.next(t); got.id != want.id || got.data != want.data {
			t.Fatalf("replayed %+v, want %+v", got, want)
		}
	}
	reset := ts.stream(t, "/profiles/default/api/events?session="+id, http.Header{"Last-Event-ID": {"0ldboot-5"}})
	if ev := reset.next(t); !strings.Contains(ev.data, `"type":"reset"`) {
		t.Errorf("first event after an unknown cursor = %+v, want a reset", ev)
	}
	if code, out := ts.call(t, "GET", "/events?session=nope", nil); code != 404 || errCode(out) != "not_found" {
		t.Errorf("events of an unknown session = %d %v", code, out)
	}
}

// TestAPIForkAndChildren forks a session while its tool call runs: the child starts from
// the parent's conversation with an unknown outcome for that call, is hidden from the
// ordinary listing, stamps its own identity in its first request, runs its own tools, and
// shows in the parent's snapshot and tree.
func TestAPIForkAndChildren(t *testing.T) {
	ts := newTestServer(t,
		fakemodel.Turn{Text: "spawning", ToolCalls: []fakemodel.ToolCall{{ID: "spawn", Name: "work", Args: `{"fork":true}`}}},
		fakemodel.Turn{Text: "child result: 7"},
		fakemodel.Turn{Text: "the child said 7"})
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "parent"})
	parent := c["session_id"].(string)
	var child string
	ts.tools.f = func(ctx context.Context, call model.ToolCall) model.ToolResult {
		// What the parent's bash would do with curl, from inside its own running call.
		code, out := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "fork-1", "parent_session": parent, "fork": true})
		if code != 201 {
			return model.ToolResult{CallID: call.ID, IsError: true, Text: jsonNum(out)}
		}
		child = out["session_id"].(string)
		ts.call(t, "POST", "/sessions/"+child+"/actions", map[string]any{"request_id": "task", "action": "submit", "text": "compute 3+4"})
		snap := ts.waitAPIIdle(t, child)
		return model.ToolResult{CallID: call.ID, Text: snap["answer"].(string) + " (from " + child + ")"}
	}
	ts.call(t, "POST", "/sessions/"+parent+"/actions", map[string]any{"request_id": "go", "action": "submit", "text": "delegate it"})
	snap := ts.waitAPIIdle(t, parent)
	if snap["answer"] != "the child said 7" {
		t.Fatalf("parent answer = %v", snap["answer"])
	}
	// The child's request: the parent's conversation, the running call as unknown, and
	// the child's own identity.
	reqs := ts.fake.Requests()
	body := string(reqs[1].Body)
	for _, want := range []string{"delegate it", "spawning", "still running in session " + parent, "session id: " + child, "parent session: " + parent, "compute 3+4"} {
		if !strings.Contains(body, want) {
			t.Errorf("the child's first request lacks %q", want)
		}
	}
	if ts.mgr.Owner(child) == ts.mgr.Owner(parent) {
		t.Error("the child shares the parent's tool owner")
	}
	_, list := ts.call(t, "GET", "/sessions", nil)
	if n := len(list["sessions"].([]any)); n != 1 {
		t.Errorf("ordinary listing has %d sessions, want only the parent", n)
	}
	_, all := ts.call(t, "GET", "/sessions?include_hidden=true", nil)
	if n := len(all["sessions"].([]any)); n != 2 {
		t.Errorf("include_hidden lists %d, want 2", n)
	}
	kids := snap["children"].([]any)
	if len(kids) != 1 || kids[0].(map[string]any)["session_id"] != child || kids[0].(map[string]any)["last_turn"] != "done" {
		t.Errorf("children = %v", kids)
	}
	if tree := snap["tree"].(map[string]any); tree["sessions"] != float64(2) || tree["busy"] != float64(0) {
		t.Errorf("tree = %v", tree)
	}
	_, cs := ts.call(t, "GET", "/sessions/"+child, nil)
	if cs["parent_session"] != parent || cs["root_session"] != parent || cs["depth"] != float64(1) || cs["hidden"] != true {
		t.Errorf("child snapshot = %v", cs)
	}
	// the parent's page links to the child from the call that created it, and back
	_, page := ts.do(t, "GET", "/profiles/default/s/"+parent+"/", nil, nil)
	if !strings.Contains(page, `href="/profiles/default/s/`+child+`/"`) {
		t.Errorf("the parent's page does not link to the child")
	}
	_, cpage := ts.do(t, "GET", "/profiles/default/s/"+child+"/", nil, nil)
	if !strings.Contains(cpage, `href="/profiles/default/s/`+parent+`/"`) {
		t.Errorf("the child's page does not link back to the parent")
	}
}

// TestAPIEventsFromTheSubmitCursor: a client that opens the event stream only after the
// turn has ended, with the submit answer's event_id, still gets all of it, the end
// included; without a cursor it would get pings only.
func TestAPIEventsFromTheSubmitCursor(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "quick answer"})
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c"})
	id := c["session_id"].(string)
	_, acc := ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s", "action": "submit", "text": "go"})
	cursor, _ := acc["event_id"].(string)
	if cursor == "" {
		t.Fatalf("the submit answer has no event_id: %v", acc)
	}
	snap := ts.waitAPIIdle(t, id)
	if snap["event_id"] == "" || snap["event_id"] == nil {
		t.Errorf("the snapshot has no event_id: %v", snap)
	}
	s := ts.stream(t, "/profiles/default/api/events?session="+id+"&after="+url.QueryEscape(cursor), nil)
	for {
		var u map[string]any
		if err := json.Unmarshal([]byte(s.next(t).data), &u); err != nil {
			t.Fatal(err)
		}
		if u["type"] == "ping" {
			t.Fatal("a ping before the turn's end: the stream from the submit's cursor missed it")
		}
		if u["type"] == "done" {
			break
		}
	}
	_, again := ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s", "action": "submit", "text": "go"})
	if again["repeat"] != true || again["event_id"] != nil {
		t.Errorf("a repeated submit = %v; want repeat and no event_id (its turn began before)", again)
	}
}

// TestAPIEmptyListsAreArrays: an empty list is [], never null: a new session's messages
// and children, a listing with nothing in it.
func TestAPIEmptyListsAreArrays(t *testing.T) {
	ts := newTestServer(t)
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c"})
	id := c["session_id"].(string)
	_, snap := ts.call(t, "GET", "/sessions/"+id, nil)
	for _, k := range []string{"messages", "children"} {
		if l, ok := snap[k].([]any); !ok || len(l) != 0 {
			t.Errorf("a new session's %s = %#v, want []", k, snap[k])
		}
	}
	if snap["depth"] != float64(0) || snap["root_session"] != id {
		t.Errorf("a root's depth and root_session = %v %v, want 0 and itself", snap["depth"], snap["root_session"])
	}
	for _, k := range []string{"job", "parent_session", "next_before", "busy_elsewhere", "stopped"} {
		if v, ok := snap[k]; ok {
			t.Errorf("a new idle root's snapshot has %s = %v; want it left out", k, v)
		}
	}
	_, list := ts.call(t, "GET", "/sessions?archived=true", nil)
	if l, ok := list["sessions"].([]any); !ok || len(l) != 0 {
		t.Errorf("an empty listing = %#v, want []", list["sessions"])
	}
}

// TestAPIRequestIDConflict: a request id reused with a different body answers 409
// request_id_conflict and does nothing (an archive reusing a set_title's id once answered
// "repeat" and did not archive); the same body again is a repeat.
func TestAPIRequestIDConflict(t *testing.T) {
	ts := newTestServer(t)
	code, out := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c", "title": "one"})
	if code != 201 {
		t.Fatalf("create = %d %v", code, out)
	}
	id := out["session_id"].(string)
	if code, out := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c", "title": "two"}); code != 409 || errCode(out) != "request_id_conflict" {
		t.Errorf("create again with another title = %d %v, want 409 request_id_conflict", code, out)
	}
	act := func(body map[string]any) (int, map[string]any) {
		return ts.call(t, "POST", "/sessions/"+id+"/actions", body)
	}
	if code, out := act(map[string]any{"request_id": "t", "action": "set_title", "title": "Named"}); code != 200 {
		t.Fatalf("set_title = %d %v", code, out)
	}
	if code, out := act(map[string]any{"request_id": "t", "action": "set_title", "title": "Named"}); code != 200 || out["repeat"] != true {
		t.Errorf("set_title again = %d %v, want a repeat", code, out)
	}
	code, out = act(map[string]any{"request_id": "t", "action": "archive"})
	if code != 409 || errCode(out) != "request_id_conflict" || !strings.Contains(out["error"].(map[string]any)["message"].(string), "set_title") {
		t.Errorf("archive reusing set_title's request id = %d %v, want 409 request_id_conflict naming set_title", code, out)
	}
	if _, snap := ts.call(t, "GET", "/sessions/"+id, nil); snap["archived"] != false {
		t.Errorf("the refused archive archived the session: %v", snap)
	}
	if code, out := act(map[string]any{"request_id": "t", "action": "submit", "text": "hi"}); code != 409 || errCode(out) != "request_id_conflict" {
		t.Errorf("submit reusing set_title's request id = %d %v, want 409 request_id_conflict", code, out)
	}
}

// TestRejectedTurnAfterReload (issue 20): a turn the provider rejects is rewound, and both
// the snapshot and a freshly loaded page show it as it happened: the user's message, marked
// as rejected, with the reason; last_turn rejected with last_error; no earlier answer given
// as the result; the context meter of the turns that stay.
func TestRejectedTurnAfterReload(t *testing.T) {
	ts := newTestServer(t,
		fakemodel.Turn{Text: "first answer", Usage: fakemodel.Usage{Input: 1234}},
		fakemodel.Turn{Status: 400, ErrorBody: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215021 tokens > 200000 maximum"}}`})
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c"})
	id := c["session_id"].(string)
	ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s1", "action": "submit", "text": "hello"})
	ts.waitAPIIdle(t, id)
	ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s2", "action": "submit", "text": "the message that does not fit"})
	snap := ts.waitAPIIdle(t, id)
	le, _ := snap["last_error"].(map[string]any)
	if snap["last_turn"] != "rejected" || le["code"] != "context_overflow" || !strings.Contains(le["message"].(string), "Compact the session") ||
		!strings.Contains(le["detail"].(string), "prompt is too long") || le["retryable"] != false || snap["answer"] != "" {
		t.Errorf("snapshot: last_turn %v, last_error %v, answer %q; want rejected, context_overflow saying what to do with the provider's words in the detail, not retryable, no answer", snap["last_turn"], le, snap["answer"])
	}
	msgs := snap["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	if last["text"] != "the message that does not fit" || last["rejected"] != true {
		t.Errorf("the last message = %v, want the rejected input, marked", last)
	}
	if u := snap["usage"].(map[string]any); u["prompt_tokens"] != float64(1234) {
		t.Errorf("usage = %v, want the kept turn's 1234 prompt tokens", u)
	}
	_, page := ts.do(t, "GET", "/profiles/default/s/"+id+"/", nil, nil)
	if !strings.Contains(page, "the message that does not fit") || !strings.Contains(page, "no longer fits in the model&#39;s context window") || !strings.Contains(page, "prompt is too long") {
		t.Errorf("the page after a reload does not show the rejected message and why:\n%s", page)
	}
}

// TestAPIEventsDropsAClientThatDoesNotRead (issue 20): a client of /api/events that never
// reads is cut off once a write waited StreamWriteTimeout (it no longer holds a goroutine
// and buffers, nor slows the others); when it comes back with its cursor after its session
// closed when idle, it gets what it missed (issue 28: a closed session's events stay
// replayable for a grace period), not a reset.
func TestAPIEventsDropsAClientThatDoesNotRead(t *testing.T) {
	fake := fakemodel.New(t)
	fake.Loop()
	fake.Script(fakemodel.Turn{Text: strings.Repeat("a long answer to fill the stream's buffers ", 100), ChunkSize: 8000})
	mgr := sessionstest.Manager(t, sessions.ManagerOptions{IdleClose: time.Hour, IdleKeep: 1,
		Models: sessionstest.NewModels(sessionstest.Client(fake.URL), "fake")})
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.ConnContext = web.ConnContext
	u, _ := url.Parse("http://" + srv.Listener.Addr().String())
	srv.Config.Handler = New(Deps{Profile: "default", Sessions: mgr, Default: "fake", Models: []ModelInfo{{Key: "fake", ContextWindow: 100000}},
		Assets: static.New("/static/"), Port: u.Port(), UID: os.Getuid(), StreamWriteTimeout: 300 * time.Millisecond, Log: slog.New(slog.NewTextHandler(t.Output(), nil))})
	srv.Start()
	t.Cleanup(srv.Close)
	ts := &testServer{Server: srv, mgr: mgr}
	_, out := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c"})
	id := out["session_id"].(string)
	_, snap := ts.call(t, "GET", "/sessions/"+id, nil)
	cursor := snap["event_id"].(string)

	idle, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	fmt.Fprintf(idle, "GET /profiles/default/api/events?session=%s HTTP/1.1\r\nHost: %s\r\n\r\n", id, u.Host)
	// Turns until far more than the client's buffers hold has been sent to it.
	for i := range 60 {
		ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": fmt.Sprintf("s%d", i), "action": "submit", "text": "go"})
		ts.waitAPIIdle(t, id)
	}
	// The server gave up on it: reading what it buffered ends, the connection closed.
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, idle); err != nil {
		t.Errorf("the client that never read was not cut off: %v", err)
	}
	// Its session closes when idle (another one is used after it).
	other, _ := mgr.Create(t.Context(), sessions.CreateOptions{})
	ts.call(t, "POST", "/sessions/"+other+"/actions", map[string]any{"request_id": "o", "action": "submit", "text": "go"})
	ts.waitAPIIdle(t, other)
	for deadline := time.Now().Add(10 * time.Second); mgr.Owner(id) != ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the idle session was not closed")
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/profiles/default/api/events?session="+id, nil)
	req.Header.Set("Last-Event-ID", cursor)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	done, resets := 0, 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for done < 60 && resets == 0 && sc.Scan() {
		switch sc.Text() {
		case "event: done":
			done++
		case "event: reset":
			resets++
		}
	}
	if done != 60 || resets != 0 {
		t.Errorf("reconnecting with its cursor after its session closed: %d turns' ends and %d resets, want the 60 it missed and no reset", done, resets)
	}
}
