package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"myco.dev/api"
	"myco.dev/internal/fakemodel"
)

// The context-length errors real servers send, per protocol (agent/model/errors_test.go).
var overflowBodies = []struct{ protocol, server, body string }{
	{"anthropic-messages", "anthropic", `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215021 tokens > 200000 maximum"}}`},
	{"openai-responses", "openai", `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`},
	{"openai-completions", "llama.cpp", `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}`},
	{"openai-completions", "vllm", `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`},
}

// submitWait submits text to session id and waits for the turn's end.
func (c apiClient) submitWait(id, req, text string) map[string]any {
	c.t.Helper()
	if code, out := c.post("/sessions/"+id+"/actions", `{"request_id":"`+req+`","action":"submit","text":"`+text+`"}`); code != 200 {
		c.t.Fatalf("submit %q = %d %v", text, code, out)
	}
	return c.wait(id)
}

// page returns the body of a GET of url.
func page(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestProviderRejectionRewinds (issue 20): for each protocol's real context-length error,
// through the real server: the turn is rewound, the snapshot says rejected with a
// context_overflow last_error and no earlier answer, the page after a reload shows the
// message and why, and the next message works (the rejected one is not sent again). An
// invalid request (400) is rewound the same way.
func TestProviderRejectionRewinds(t *testing.T) {
	cases := append(overflowBodies, struct{ protocol, server, body string }{"anthropic-messages", "invalid",
		`{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.tool_use.id: String should match pattern"}}`})
	for _, tt := range cases {
		t.Run(tt.server, func(t *testing.T) {
			fake := fakemodel.New(t,
				fakemodel.Turn{Text: "first answer", Usage: fakemodel.Usage{Input: 321}},
				fakemodel.Turn{Status: 400, ErrorBody: tt.body},
				fakemodel.Turn{Text: "after the rewind"})
			home := profileHome(t, tt.protocol, fake.URL, "")
			_, u, _ := startServer(t, home)
			c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
			id, _ := c.run("r", "hello")
			snap := c.submitWait(id, "r-2", "the message that is too big")
			le, _ := snap["last_error"].(map[string]any)
			code := "context_overflow"
			if tt.server == "invalid" {
				code = "rejected"
			}
			if snap["last_turn"] != "rejected" || le["code"] != code || snap["answer"] != "" {
				t.Errorf("snapshot: last_turn %v, last_error %v, answer %q; want rejected, %s, no answer", snap["last_turn"], le, snap["answer"], code)
			}
			if u := snap["usage"].(map[string]any); u["prompt_tokens"] != float64(321) {
				t.Errorf("the meter after the rewind = %v, want the kept turn's 321 tokens", u)
			}
			html := page(t, u+"s/"+id+"/")
			if !strings.Contains(html, "the message that is too big") || !strings.Contains(html, "the turn was rewound") || !strings.Contains(html, "<summary>Details</summary>") {
				t.Errorf("the page after a reload does not show the rejected message and why")
			}
			snap = c.submitWait(id, "r-3", "small")
			if snap["last_turn"] != "done" || snap["answer"] != "after the rewind" || snap["last_error"] != nil {
				t.Errorf("the next message: %v", snap)
			}
			if body := string(fake.Requests()[2].Body); strings.Contains(body, "the message that is too big") || !strings.Contains(body, "first answer") {
				t.Errorf("the request after the rewind carries the rejected message, or lost the first turn:\n%s", body)
			}
		})
	}
}

// TestOverflowCompactsAndRetries (issue 20): with auto_compact_at set, an overflow compacts
// the session and sends the message once more in the successor thread; a second overflow
// stops with a plain message.
func TestOverflowCompactsAndRetries(t *testing.T) {
	const summary = "## Goal\nTest.\n## User constraints\nnone\n## Done\nhello\n## In progress\n-\n## Next action\n-\n## Files touched\n-\n## Commands\n-\n## Unknown outcomes\n-"
	for _, tt := range overflowBodies {
		t.Run(tt.server, func(t *testing.T) {
			fake := fakemodel.New(t,
				fakemodel.Turn{Text: "first answer"},
				fakemodel.Turn{Status: 400, ErrorBody: tt.body},
				fakemodel.Turn{Text: summary},
				fakemodel.Turn{Text: "it fits now"},
				fakemodel.Turn{Status: 400, ErrorBody: tt.body},
				fakemodel.Turn{Text: summary},
				fakemodel.Turn{Status: 400, ErrorBody: tt.body})
			home := profileHome(t, tt.protocol, fake.URL, "auto_compact_at = 0.8\n")
			_, u, _ := startServer(t, home)
			c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
			id, _ := c.run("r", "hello")
			snap := c.submitWait(id, "r-2", "a long message")
			if snap["last_turn"] != "done" || snap["answer"] != "it fits now" || !strings.HasPrefix(snap["active_thread"].(string), "t3") {
				t.Errorf("after an overflow with auto-compaction: %v; want the message answered in the compacted thread t3", snap)
			}
			snap = c.submitWait(id, "r-3", "a huge message")
			le, _ := snap["last_error"].(map[string]any)
			if snap["last_turn"] != "rejected" || le["code"] != "context_overflow" || !strings.Contains(le["message"].(string), "even after the session was compacted") {
				t.Errorf("after a second overflow: last_turn %v, last_error %v; want rejected saying it does not fit even after compacting", snap["last_turn"], le)
			}
			if n := fake.Served(); n != 7 {
				t.Errorf("the model was asked %d times, want 7: one retry per overflowing message", n)
			}
		})
	}
}

// TestAutoCompactionGuardOnlyForLoops (issue 20): an answer that ends a turn over the
// threshold compacts once even when a compaction between tool rounds happened a step
// before in the same turn, and auto-compaction stays on: the next answer over the threshold
// compacts again. Nothing says the run stops.
func TestAutoCompactionGuardOnlyForLoops(t *testing.T) {
	const summary = "## Goal\nTest.\n## User constraints\nnone\n## Done\n-\n## In progress\n-\n## Next action\n-\n## Files touched\n-\n## Commands\n-\n## Unknown outcomes\n-"
	big := fakemodel.Usage{Input: 90000}
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"true"}`}}, Usage: big},
		fakemodel.Turn{Text: summary},                                 // between the tool rounds
		fakemodel.Turn{Text: "answer over the threshold", Usage: big}, // one step after it
		fakemodel.Turn{Text: summary},                                 // after the answer
		fakemodel.Turn{Text: "continued", Usage: fakemodel.Usage{Input: 100}},
		fakemodel.Turn{Text: "again over", Usage: big},
		fakemodel.Turn{Text: summary},
		fakemodel.Turn{Text: "continued again", Usage: fakemodel.Usage{Input: 100}})
	home := profileHome(t, "anthropic-messages", fake.URL, "auto_compact_at = 0.8\n")
	_, u, _ := startServer(t, home)
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	_, out := c.post("/sessions", `{"request_id":"g"}`)
	id := out["session_id"].(string)
	_, snap := c.get("/sessions/" + id)
	cursor := snap["event_id"].(string)
	snap = c.submitWait(id, "g-1", "work")
	if snap["last_turn"] != "done" || snap["answer"] != "continued" || snap["active_thread"] != "t3" {
		t.Errorf("after the turn: %v; want done with the continuation's answer in t3", snap)
	}
	snap = c.submitWait(id, "g-2", "more")
	if snap["answer"] != "continued again" || snap["active_thread"] != "t4" {
		t.Errorf("the next answer over the threshold: %v; want it compacted (t4): auto-compaction stays on", snap)
	}
	compactions := 0
	for _, ev := range readEvents(t, c.base+"/events?session="+id+"&after="+cursor, time.Second) {
		if strings.Contains(ev, "stops here") || strings.Contains(ev, "auto-compaction is off") {
			t.Errorf("an event says the run stopped or auto-compaction went off: %s", ev)
		}
		if strings.Contains(ev, `"type":"compacted"`) {
			compactions++
		}
	}
	if compactions != 3 {
		t.Errorf("%d compacted events, want 3", compactions)
	}
}

// readEvents reads the data of an event stream's events for d.
func readEvents(t *testing.T, url string, d time.Duration) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []string
	rd := api.NewSSEReader(resp.Body)
	for {
		ev, err := rd.Next()
		if err != nil {
			return out
		}
		out = append(out, ev.Data)
	}
}

// TestFailedTurnsAfterReload (issue 20): a turn rejected by max_request_bytes no longer
// vanishes on reload (the page shows the message and why, the meter keeps the kept turns'
// tokens, the snapshot says rejected with request_too_large and gives no earlier answer),
// and a turn that failed (a 401, auth_failed) carries its reason in the snapshot, not only
// in the events.
func TestFailedTurnsAfterReload(t *testing.T) {
	fake := fakemodel.New(t,
		fakemodel.Turn{Text: "first answer", Usage: fakemodel.Usage{Input: 777}},
		fakemodel.Turn{Status: 401, ErrorBody: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`},
		fakemodel.Turn{Text: "third"})
	home := profileHome(t, "anthropic-messages", fake.URL, "max_request_bytes = 20000\n")
	_, u, _ := startServer(t, home)
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	id, _ := c.run("r", "hello")
	big := strings.Repeat("too big ", 3000)
	snap := c.submitWait(id, "r-2", big)
	le, _ := snap["last_error"].(map[string]any)
	if snap["last_turn"] != "rejected" || le["code"] != "request_too_large" || !strings.Contains(le["message"].(string), "max_request_bytes") || snap["answer"] != "" {
		t.Errorf("after the byte cap: last_turn %v, last_error %v, answer %q; want rejected, request_too_large, no answer", snap["last_turn"], le, snap["answer"])
	}
	if u := snap["usage"].(map[string]any); u["prompt_tokens"] != float64(777) {
		t.Errorf("the meter after the byte cap = %v, want the kept turn's 777", u)
	}
	html := page(t, u+"s/"+id+"/")
	if !strings.Contains(html, "too big too big") || !strings.Contains(html, "max_request_bytes") {
		t.Error("the page after a reload does not show the rejected message and why")
	}
	snap = c.submitWait(id, "r-3", "small")
	le, _ = snap["last_error"].(map[string]any)
	if snap["last_turn"] != "failed" || le["code"] != "auth_failed" || !strings.Contains(le["message"].(string), "refused the credential") ||
		!strings.Contains(le["detail"].(string), "invalid x-api-key") || snap["answer"] != "" {
		t.Errorf("after a 401: last_turn %v, last_error %v, answer %q; want failed, auth_failed with the provider's words in the detail, no answer", snap["last_turn"], le, snap["answer"])
	}
	if html := page(t, u+"s/"+id+"/"); !strings.Contains(html, "invalid x-api-key") {
		t.Error("the page after a reload does not show why the turn failed")
	}
}
