package handlers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/api"
	"myco.dev/internal/fakemodel"
)

// raw sends a request to the API with a raw body (JSON when not empty) and returns the
// answer and its body.
func (ts *testServer) raw(t *testing.T, method, path, body string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+"/profiles/default/api"+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestAPIStrictActions (issue 22): each action takes its own fields: one it lacks is a
// missing_field that names it, one of another action an unknown_field that names it; an
// unknown or repeated query parameter is refused too.
func TestAPIStrictActions(t *testing.T) {
	ts := newTestServer(t)
	id, _ := ts.session(t)
	act := "/sessions/" + id + "/actions"
	for _, tt := range []struct {
		name, method, path, body string
		status                   int
		code, says               string
	}{
		{"select_model without model", "POST", act, `{"request_id":"r","action":"select_model"}`, 400, "missing_field", `"model"`},
		{"select_model with an empty model", "POST", act, `{"request_id":"r","action":"select_model","model":""}`, 400, "missing_field", `"model"`},
		{"model on a submit", "POST", act, `{"request_id":"r","action":"submit","text":"hi","model":"fake"}`, 400, "unknown_field", `action submit: unknown field "model"`},
		{"text on a compact", "POST", act, `{"request_id":"r","action":"compact","text":"x"}`, 400, "unknown_field", `"text"`},
		{"title on an archive", "POST", act, `{"request_id":"r","action":"archive","title":"x"}`, 400, "unknown_field", `"title"`},
		{"set_title without title", "POST", act, `{"request_id":"r","action":"set_title"}`, 400, "missing_field", `"title"`},
		{"action without request id", "POST", act, `{"action":"archive"}`, 400, "missing_field", `"request_id"`},
		{"action not a string", "POST", act, `{"request_id":"r","action":7}`, 400, "invalid_field", `"action"`},
		{"submit without text", "POST", act, `{"request_id":"r","action":"submit","text":"  "}`, 400, "missing_field", `"text"`},
		{"timeout without wait", "POST", act, `{"request_id":"r","action":"submit","text":"hi","timeout_secs":5}`, 400, "invalid_field", `"timeout_secs"`},
		{"timeout too long", "POST", act, `{"request_id":"r","action":"submit","text":"hi","wait":true,"timeout_secs":99999}`, 400, "invalid_field", `"timeout_secs"`},
		{"cancel timeout out of range", "POST", "/sessions/" + id + "/cancel", `{"timeout_secs":-1}`, 400, "invalid_field", `"timeout_secs"`},
		{"unknown list parameter", "GET", "/sessions?archive=true", "", 400, "unknown_field", `"archive"; this endpoint takes include_hidden, archived`},
		{"unknown snapshot parameter", "GET", "/sessions/" + id + "?limt=3", "", 400, "unknown_field", `"limt"`},
		{"parameter twice", "GET", "/sessions/" + id + "?limit=3&limit=4", "", 400, "duplicate_field", `"limit"`},
		{"parameter of an endpoint that takes none", "GET", "/models?verbose=1", "", 400, "unknown_field", "takes none"},
		{"bad cursor", "GET", "/sessions?cursor=nope", "", 400, "invalid_field", "cursor"},
		{"limit over the maximum", "GET", "/sessions?limit=501", "", 400, "invalid_field", "limit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := ts.raw(t, tt.method, tt.path, tt.body, nil)
			var out api.ErrorAnswer
			json.Unmarshal([]byte(body), &out)
			if resp.StatusCode != tt.status || out.Error.Code != tt.code || !strings.Contains(out.Error.Message, tt.says) {
				t.Errorf("%s %s %s = %d %s, want %d %s saying %s", tt.method, tt.path, tt.body, resp.StatusCode, body, tt.status, tt.code, tt.says)
			}
		})
	}
	if _, snap := ts.call(t, "GET", "/sessions/"+id, nil); snap["model"] != "fake" || snap["title"] != "" {
		t.Errorf("a refused action changed the session: %v", snap)
	}
}

// TestAPIWait (issue 22): a submit with wait answers when its turn has ended, with the
// answer, last_turn and last_error; the answer endpoint gives the same text as it is,
// commas, quotes and line breaks included; a failed turn says why.
func TestAPIWait(t *testing.T) {
	answer := "There are 154 files, counted with \"ls\".\nSecond line, with a comma."
	ts := newTestServer(t, fakemodel.Turn{Text: answer}, fakemodel.Turn{Status: 500, ErrorType: "api_error", ErrorMessage: "the gateway fell over"})
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c"})
	id := c["session_id"].(string)
	code, out := ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s1", "action": "submit", "text": "count", "wait": true, "timeout_secs": 30})
	if code != 200 || out["ended"] != true || out["last_turn"] != "done" || out["answer"] != answer || out["last_error"] != nil {
		t.Fatalf("submit with wait = %d %v", code, out)
	}
	if _, snap := ts.call(t, "GET", "/sessions/"+id, nil); snap["busy"] != false {
		t.Errorf("after a waited submit the snapshot says busy: %v", snap)
	}
	resp, body := ts.raw(t, "GET", "/sessions/"+id+"/answer", "", nil)
	if resp.StatusCode != 200 || body != answer || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || resp.Header.Get("Myco-Last-Turn") != "done" {
		t.Errorf("GET answer = %d %v %q, want the answer as text", resp.StatusCode, resp.Header, body)
	}
	// the same request again answers the same end without a second turn
	if _, again := ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s1", "action": "submit", "text": "count", "wait": true, "timeout_secs": 30}); again["repeat"] != true || again["answer"] != answer {
		t.Errorf("the waited submit again = %v, want a repeat with the answer", again)
	}
	_, out = ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s2", "action": "submit", "text": "again", "wait": true})
	le, _ := out["last_error"].(map[string]any)
	if out["ended"] != true || out["last_turn"] != "failed" || le["code"] != "model_error" || out["answer"] != "" {
		t.Errorf("a failed turn's waited submit = %v, want failed with model_error and no answer", out)
	}
	resp, body = ts.raw(t, "GET", "/sessions/"+id+"/answer", "", nil)
	if body != "" || resp.Header.Get("Myco-Last-Turn") != "failed" || resp.Header.Get("Myco-Last-Error") != "model_error" {
		t.Errorf("GET answer after a failure = %v %q, want no answer and why", resp.Header, body)
	}
	if _, after := ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s1", "action": "submit", "text": "count", "wait": true}); after["ended"] != true || after["answer"] != nil || after["last_turn"] != nil {
		t.Errorf("a repeat of a turn a later one followed = %v; want ended without another turn's end", after)
	}
}

// TestAPIWaitTimesOutThenCancel (issue 22): a waited submit whose turn outlasts its
// timeout answers ended false with the job; the same request waits again; a cancel answers
// once the turn has stopped (the snapshot then says busy false at once), and the waiting
// request answers stopped.
func TestAPIWaitTimesOutThenCancel(t *testing.T) {
	ts, started := newStuckServer(t)
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c"})
	id := c["session_id"].(string)
	submit := map[string]any{"request_id": "s", "action": "submit", "text": "go", "wait": true, "timeout_secs": 1}
	code, out := ts.call(t, "POST", "/sessions/"+id+"/actions", submit)
	<-started
	if code != 200 || out["ended"] != false || out["last_turn"] != "running" || out["job_id"] == nil {
		t.Fatalf("a waited submit past its timeout = %d %v", code, out)
	}
	waited := make(chan map[string]any, 1)
	go func() {
		_, again := ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s", "action": "submit", "text": "go", "wait": true, "timeout_secs": 30})
		waited <- again
	}()
	code, cancel := ts.call(t, "POST", "/sessions/"+id+"/cancel", map[string]any{"job_id": out["job_id"]})
	if code != 200 || cancel["stopped"] != true || cancel["stopping"] != false || cancel["job_id"] != out["job_id"] || cancel["event_id"] == "" {
		t.Fatalf("cancel = %d %v", code, cancel)
	}
	if _, snap := ts.call(t, "GET", "/sessions/"+id, nil); snap["busy"] != false || snap["last_turn"] != "stopped" {
		t.Errorf("the snapshot right after the cancel = busy %v, last_turn %v; want false, stopped", snap["busy"], snap["last_turn"])
	}
	select {
	case again := <-waited:
		if le, _ := again["last_error"].(map[string]any); again["ended"] != true || again["last_turn"] != "stopped" || le["code"] != "stopped" {
			t.Errorf("the waiting submit = %v, want ended, stopped", again)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting submit did not answer after the cancel")
	}
}

// TestAPICancelStopping (issue 22): a job that does not end within the cancel's timeout is
// answered stopping, with the cursor whose events show its end: a cancelled event with its
// code, then state busy false.
func TestAPICancelStopping(t *testing.T) {
	release := make(chan struct{})
	ts := newTestServer(t, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "work", Args: `{}`}}}, fakemodel.Turn{Text: "never"})
	started := make(chan struct{})
	ts.tools.f = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		close(started)
		<-release // deaf to the cancel, as a call stuck in a system call is
		return model.ToolResult{CallID: c.ID}
	}
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c"})
	id := c["session_id"].(string)
	ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s", "action": "submit", "text": "go"})
	<-started
	code, out := ts.call(t, "POST", "/sessions/"+id+"/cancel", map[string]any{"timeout_secs": 1})
	if code != 200 || out["stopped"] != true || out["stopping"] != true {
		t.Fatalf("cancel of a job that does not end in time = %d %v, want stopping", code, out)
	}
	close(release)
	s := ts.stream(t, "/profiles/default/api/events?session="+id+"&after="+url.QueryEscape(out["event_id"].(string)), nil)
	var cancelled map[string]any
	for {
		ev := s.next(t)
		var u map[string]any
		json.Unmarshal([]byte(ev.data), &u)
		if ev.event != u["type"] {
			t.Errorf("event %q carries type %v", ev.event, u["type"])
		}
		if u["type"] == "cancelled" {
			cancelled = u
		}
		if u["type"] == "state" && u["busy"] == false {
			break
		}
	}
	if cancelled == nil || cancelled["code"] != "stopped" || cancelled["error"] != "stopped by the user" {
		t.Errorf("the cancelled event = %v, want code stopped and a sentence", cancelled)
	}
}

// TestAPIAttachments (issue 22): a submit carries files as base64, held to the browser's
// checks; an @path that names no file, or one that cannot be attached, is a warning and the
// message goes; an explicit attachment that cannot go refuses the message.
func TestAPIAttachments(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "read them"})
	notes := filepath.Join(ts.ws, "..", "notes.txt")
	os.WriteFile(notes, []byte("from the directory"), 0o600)
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c"})
	id := c["session_id"].(string)
	b64 := base64.StdEncoding.EncodeToString
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...)
	act := func(body map[string]any) (int, map[string]any) {
		return ts.call(t, "POST", "/sessions/"+id+"/actions", body)
	}
	for _, tt := range []struct {
		name  string
		files []map[string]any
		code  int
		err   string
	}{
		{"binary", []map[string]any{{"name": "a.bin", "data": b64([]byte{0, 1, 2, 0xff})}}, 400, "bad_attachment"},
		{"not base64", []map[string]any{{"name": "a.txt", "data": "%%%"}}, 400, "invalid_field"},
		{"no name", []map[string]any{{"name": "", "data": b64([]byte("x"))}}, 400, "missing_field"},
		{"unknown field", []map[string]any{{"name": "a.txt", "data": b64([]byte("x")), "type": "text"}}, 400, "unknown_field"},
		{"too many", func() (fs []map[string]any) {
			for i := range 21 {
				fs = append(fs, map[string]any{"name": fmt.Sprintf("f%d.txt", i), "data": b64([]byte("x"))})
			}
			return fs
		}(), 400, "bad_attachment"},
	} {
		if code, out := act(map[string]any{"request_id": "r-" + tt.name, "action": "submit", "text": "see", "attachments": tt.files}); code != tt.code || errCode(out) != tt.err {
			t.Errorf("%s: submit = %d %v, want %d %s", tt.name, code, out, tt.code, tt.err)
		}
	}
	code, out := act(map[string]any{"request_id": "ok", "action": "submit", "wait": true,
		"text":        "Read @notes.txt and @missing/file.txt and @/dev/null, please.",
		"attachments": []map[string]any{{"name": "dir/spec.md", "data": b64([]byte("# The spec"))}, {"name": "shot.png", "data": b64(png)}}})
	if code != 200 || out["ended"] != true {
		t.Fatalf("submit with attachments = %d %v", code, out)
	}
	warnings := fmt.Sprint(out["warnings"])
	if !strings.Contains(warnings, "@/dev/null is not a regular file") || !strings.Contains(warnings, "@missing/file.txt names no file") {
		t.Errorf("warnings = %s, want /dev/null and the missing file", warnings)
	}
	body := string(ts.fake.Requests()[0].Body)
	for _, want := range []string{"[attached file notes.txt]", "from the directory", "[attached file spec.md]", "# The spec", `"media_type":"image/png"`, "@/dev/null"} {
		if !strings.Contains(body, want) {
			t.Errorf("the model's request lacks %q", want)
		}
	}
	_, snap := ts.call(t, "GET", "/sessions/"+id, nil)
	if m := snap["messages"].([]any)[0].(map[string]any); m["images"] != float64(1) {
		t.Errorf("the message = %v, want one image", m)
	}

	// The request id again: the same body is a repeat, even though a file its text names
	// has changed since; other uploads under the same id are another request, refused.
	os.WriteFile(notes, []byte("changed since"), 0o600)
	same := []map[string]any{{"name": "dir/spec.md", "data": b64([]byte("# The spec"))}, {"name": "shot.png", "data": b64(png)}}
	retry := func(files []map[string]any) (int, map[string]any) {
		return act(map[string]any{"request_id": "ok", "action": "submit", "text": "Read @notes.txt and @missing/file.txt and @/dev/null, please.", "attachments": files})
	}
	if code, out := retry(same); code != 200 || out["repeat"] != true {
		t.Errorf("the same submit again = %d %v, want a repeat", code, out)
	}
	other := []map[string]any{{"name": "dir/spec.md", "data": b64([]byte("# Another spec"))}, {"name": "shot.png", "data": b64(png)}}
	if code, out := retry(other); code != 409 || errCode(out) != "request_id_conflict" {
		t.Errorf("the id with another upload = %d %v, want 409 request_id_conflict", code, out)
	}
	if code, out := retry(same[:1]); code != 409 || errCode(out) != "request_id_conflict" {
		t.Errorf("the id with one upload fewer = %d %v, want 409 request_id_conflict", code, out)
	}
	if n := len(ts.fake.Requests()); n != 1 {
		t.Errorf("the model got %d requests, want the first only", n)
	}
}

// TestAPIListPaging (issue 22): the list comes a page at a time, newest first, each session
// once, next_cursor leading to the next page and missing on the last.
func TestAPIListPaging(t *testing.T) {
	ts := newTestServer(t)
	var ids []string
	for i := range 5 {
		_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": fmt.Sprint("c", i)})
		ids = append(ids, c["session_id"].(string))
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		path := "/sessions?limit=2"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		_, page := ts.call(t, "GET", path, nil)
		list := page["sessions"].([]any)
		if len(list) > 2 || pages > 3 {
			t.Fatalf("page %d = %v", pages, page)
		}
		for _, s := range list {
			got = append(got, s.(map[string]any)["session_id"].(string))
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(got) != 5 {
		t.Fatalf("paged through %v, want the 5 sessions", got)
	}
	_, all := ts.call(t, "GET", "/sessions", nil)
	var whole []string
	for _, s := range all["sessions"].([]any) {
		whole = append(whole, s.(map[string]any)["session_id"].(string))
	}
	if strings.Join(got, " ") != strings.Join(whole, " ") || all["next_cursor"] != nil {
		t.Errorf("the pages = %v, the whole list = %v (next_cursor %v); want the same, newest first, and no cursor", got, whole, all["next_cursor"])
	}
	if whole[0] != ids[4] || whole[4] != ids[0] {
		t.Errorf("the list = %v, want the newest (%s) first", whole, ids[4])
	}
}

// TestAPIDiscovery (issue 22): the models, the versions and the document are served; every
// answer carries the API's version; a method an endpoint does not take is 405 with Allow,
// and a path that is no endpoint 404, both in the envelope; gzip;q=0 is honoured.
func TestAPIDiscovery(t *testing.T) {
	ts := newTestServer(t)
	_, models := ts.call(t, "GET", "/models", nil)
	list := models["models"].([]any)
	if models["default"] != "fake" || len(list) != 2 || list[0].(map[string]any)["protocol"] != "anthropic-messages" || list[0].(map[string]any)["default"] != true ||
		list[1].(map[string]any)["context_window"] != float64(1000) {
		t.Errorf("models = %v", models)
	}
	resp, body := ts.raw(t, "GET", "/version", "", nil)
	var v api.VersionAnswer
	json.Unmarshal([]byte(body), &v)
	if resp.Header.Get(api.VersionHeader) != api.Version || v.API != api.Version || v.HostProtocol == 0 {
		t.Errorf("version = %v %s", resp.Header, body)
	}
	resp, body = ts.raw(t, "GET", "/openapi.json", "", nil)
	if resp.StatusCode != 200 || body != string(openAPIDocument) {
		t.Errorf("GET openapi.json = %d, not the document", resp.StatusCode)
	}
	resp, body = ts.raw(t, "DELETE", "/sessions", "", nil)
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, POST" || !strings.Contains(body, `"method_not_allowed"`) || resp.Header.Get(api.VersionHeader) != api.Version {
		t.Errorf("DELETE /sessions = %d %v %s, want 405 with Allow: GET, POST", resp.StatusCode, resp.Header, body)
	}
	resp, _ = ts.raw(t, "PUT", "/sessions/x/answer", "", nil)
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET" {
		t.Errorf("PUT answer = %d Allow %q, want 405 with Allow: GET", resp.StatusCode, resp.Header.Get("Allow"))
	}
	resp, body = ts.raw(t, "GET", "/nothing/here", "", nil)
	if resp.StatusCode != 404 || !strings.Contains(body, `"not_found"`) || resp.Header.Get(api.VersionHeader) != api.Version {
		t.Errorf("GET /nothing/here = %d %s", resp.StatusCode, body)
	}
	for enc, gz := range map[string]bool{"gzip": true, "gzip;q=0": false, "gzip;q=0, br": false} {
		req, _ := http.NewRequest("GET", ts.URL+"/profiles/default/api/openapi.json", nil)
		req.Header.Set("Accept-Encoding", enc)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Content-Encoding") == "gzip"; got != gz {
			t.Errorf("Accept-Encoding %q: gzipped %v, want %v", enc, got, gz)
		}
	}
}

// TestAPICreationEvents (issue 22): a stream of a parent sees its child created; a title
// change and an archive are meta events with the new values; each event's SSE name is its
// type.
func TestAPICreationEvents(t *testing.T) {
	ts := newTestServer(t)
	_, p := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "p"})
	parent := p["session_id"].(string)
	s := ts.stream(t, "/profiles/default/api/events?session="+parent, nil)
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c", "parent_session": parent})
	ts.call(t, "POST", "/sessions/"+parent+"/actions", map[string]any{"request_id": "t", "action": "set_title", "title": "Renamed"})
	ts.call(t, "POST", "/sessions/"+parent+"/actions", map[string]any{"request_id": "a", "action": "archive"})
	var got []string
	for len(got) < 3 {
		ev := s.next(t)
		var u map[string]any
		json.Unmarshal([]byte(ev.data), &u)
		if ev.event != u["type"] {
			t.Errorf("event %q carries type %v", ev.event, u["type"])
		}
		switch u["type"] {
		case "child_created":
			if u["child_session"] != c["session_id"] || u["model"] != "fake" {
				t.Errorf("child_created = %v", u)
			}
			got = append(got, "child_created")
		case "meta":
			got = append(got, fmt.Sprintf("meta %v %v", u["title"], u["archived"]))
		}
	}
	if strings.Join(got, "; ") != "child_created; meta Renamed false; meta Renamed true" {
		t.Errorf("events = %v", got)
	}
}
