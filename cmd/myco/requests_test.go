package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"myco.dev/internal/fakemodel"
)

// postRaw posts body as it is to the API and returns the status and the error code.
func (c apiClient) postRaw(path, body string) (int, map[string]any) {
	c.t.Helper()
	resp, err := http.Post(c.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// apiErr returns the code and message of an error answer.
func apiErr(out map[string]any) (code, msg string) {
	e, _ := out["error"].(map[string]any)
	code, _ = e["code"].(string)
	msg, _ = e["message"].(string)
	return code, msg
}

// TestStrictRequests (issue 20): through the real server, field names are matched
// exactly, a key twice is refused naming it, a request id must be valid UTF-8, and a
// request id reused with a different body answers 409 request_id_conflict and does nothing.
func TestStrictRequests(t *testing.T) {
	home := profileHome(t, "anthropic-messages", fakemodel.New(t, fakemodel.Turn{Text: "hi"}).URL, "")
	_, u, _ := startServer(t, home)
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	for _, tt := range []struct{ body, code, names string }{
		{`{"Request_ID": "x"}`, "unknown_field", "request_id"},
		{`{"request_id": "x", "request_id": "y"}`, "duplicate_field", "request_id"},
		{"{\"request_id\": \"x\xff\"}", "invalid_field", "request_id"},
	} {
		code, out := c.postRaw("/sessions", tt.body)
		if ec, msg := apiErr(out); code != 400 || ec != tt.code || !strings.Contains(msg, tt.names) {
			t.Errorf("create %q = %d %v, want 400 %s naming %s", tt.body, code, out, tt.code, tt.names)
		}
	}
	code, out := c.post("/sessions", `{"request_id": "c"}`)
	if code != 201 {
		t.Fatalf("create = %d %v", code, out)
	}
	id := out["session_id"].(string)
	if code, out := c.post("/sessions", `{"request_id": "c", "title": "other"}`); code != 409 {
		t.Errorf("create with a used request id and another body = %d %v, want 409", code, out)
	}
	if code, out := c.post("/sessions/"+id+"/actions", `{"request_id": "t", "action": "set_title", "title": "Named"}`); code != 200 {
		t.Fatalf("set_title = %d %v", code, out)
	}
	code, out = c.post("/sessions/"+id+"/actions", `{"request_id": "t", "action": "archive"}`)
	if ec, _ := apiErr(out); code != 409 || ec != "request_id_conflict" {
		t.Errorf("archive reusing set_title's request id = %d %v, want 409 request_id_conflict", code, out)
	}
	if _, snap := c.get("/sessions/" + id); snap["archived"] != false || snap["title"] != "Named" {
		t.Errorf("after the refused archive: %v", snap)
	}
	if code, out := c.post("/sessions/"+id+"/actions", `{"request_id": "t", "action": "set_title", "title": "Named"}`); code != 200 || out["repeat"] != true {
		t.Errorf("the same set_title again = %d %v, want a repeat", code, out)
	}
}

// TestCancelTargetsItsTurn (issue 20): a submit racing a cancel either runs or is refused
// with 409 busy, never 500; a cancel that names the job of a turn that has ended does not
// stop the next turn.
func TestCancelTargetsItsTurn(t *testing.T) {
	fake := fakemodel.New(t)
	fake.Loop()
	fake.Script(fakemodel.Turn{Text: "quick"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	_, u, _ := startServer(t, home)
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	_, out := c.post("/sessions", `{"request_id":"r"}`)
	id := out["session_id"].(string)
	for i := range 20 {
		codes := make(chan int, 2)
		go func() {
			code, _ := c.post("/sessions/"+id+"/actions", fmt.Sprintf(`{"request_id":"s%d","action":"submit","text":"go %d"}`, i, i))
			codes <- code
		}()
		go func() {
			code, _ := c.post("/sessions/"+id+"/cancel", "")
			codes <- code
		}()
		for range 2 {
			if code := <-codes; code != 200 && code != 409 {
				t.Fatalf("round %d: an answer %d; a submit racing a cancel runs or is refused busy", i, code)
			}
		}
		c.wait(id)
	}
}

// TestLateCancelIsANoOp (issue 20): a cancel that names the job of a turn that has ended
// does not stop the next turn.
func TestLateCancelIsANoOp(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Turn{Text: "one"}, fakemodel.Turn{Text: "a slow second answer", DelayMs: 30, ChunkSize: 1})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	_, u, _ := startServer(t, home)
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	_, out := c.post("/sessions", `{"request_id":"r"}`)
	id := out["session_id"].(string)
	_, first := c.post("/sessions/"+id+"/actions", `{"request_id":"late-1","action":"submit","text":"one"}`)
	c.wait(id)
	code, second := c.post("/sessions/"+id+"/actions", `{"request_id":"late-2","action":"submit","text":"two"}`)
	if code != 200 || second["job_id"] == first["job_id"] || first["job_id"] == nil {
		t.Fatalf("submits = %v, %v; want two job ids", first, second)
	}
	_, cancel := c.post("/sessions/"+id+"/cancel", `{"job_id":"`+first["job_id"].(string)+`"}`)
	if cancel["stopped"] != false {
		t.Errorf("a cancel of the ended turn = %v, want stopped false", cancel)
	}
	if _, snap := c.get("/sessions/" + id); snap["busy"] != true {
		t.Errorf("the second turn ended before the late cancel came: the test proves nothing (%v)", snap)
	}
	if snap := c.wait(id); snap["last_turn"] != "done" || snap["answer"] != "a slow second answer" {
		t.Errorf("the second turn after a late cancel: %v, want done", snap)
	}
}
