package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
	"myco.dev/sessions"
)

// TestBrokenStreamKeepsTextAndRetries: after a model stream broke mid-answer, the page
// shows what streamed, marked as broken off, the failure in plain words with the
// technical detail folded, and a Retry button that sends the turn again; once it has
// answered, Retry is gone.
func TestBrokenStreamKeepsTextAndRetries(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "Half an answer", Drop: true}, fakemodel.Turn{Text: "the whole answer"})
	id, p := ts.session(t)
	j, err := ts.mgr.Submit(t.Context(), id, model.TextPart("explain"))
	if err != nil {
		t.Fatal(err)
	}
	j.Wait(t.Context())
	_, page := ts.do(t, "GET", p, nil, nil)
	for _, want := range []string{"Half an answer", "The answer broke off here.", "<summary>Details</summary>", `hx-post="` + p + `retry"`, ">Retry</button>",
		`<span class="hint">Retry sends the turn again.</span>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page after a broken stream lacks %q", want)
		}
	}
	resp, body := ts.do(t, "POST", p+"retry", http.Header{"HX-Request": {"true"}}, url.Values{})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Retrying") {
		t.Fatalf("retry = %d %s", resp.StatusCode, body)
	}
	ts.waitIdle(t, id)
	_, page = ts.do(t, "GET", p, nil, nil)
	if !strings.Contains(page, "the whole answer") || !strings.Contains(page, "Half an answer") || strings.Contains(page, ">Retry</button>") {
		t.Errorf("after the retry the page should show both answers and no Retry:\n%s", page)
	}
	// The failure's note stays, and no longer speaks of a Retry it does not offer.
	if !strings.Contains(page, "The model&#39;s answer broke off") || strings.Contains(page, "Retry sends") {
		t.Errorf("after the retry the old failure's note should stay without its Retry hint:\n%s", page)
	}
	if resp, _ := ts.do(t, "POST", p+"retry", http.Header{"HX-Request": {"true"}}, url.Values{}); resp.StatusCode != http.StatusConflict {
		t.Errorf("a retry of an answered turn = %d, want 409", resp.StatusCode)
	}
}

// TestStoppedToolCardKeepsItsOutput: a tool call stopped while it ran shows as stopped,
// with what it printed until then (not the note to the model), and the turn's end offers
// Retry.
func TestStoppedToolCardKeepsItsOutput(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "work", Args: `{}`}}})
	started := make(chan struct{})
	ts.tools.f = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		close(started)
		<-ctx.Done()
		return model.ToolResult{CallID: c.ID, Text: "line one\nline two\n"}
	}
	id, p := ts.session(t)
	if _, err := ts.mgr.Submit(t.Context(), id, model.TextPart("go")); err != nil {
		t.Fatal(err)
	}
	<-started
	ts.mgr.Cancel(id, "")
	ts.waitIdle(t, id)
	_, page := ts.do(t, "GET", p, nil, nil)
	for _, want := range []string{"line one\nline two", `class="tool-status unknown">stopped<`, "Stopped. A call that was running may have taken effect", ">Retry</button>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page after a stopped call lacks %q", want)
		}
	}
	if strings.Contains(page, "Its output until then") {
		t.Error("the card shows the note to the model, not what the call printed")
	}
	sess, _, _ := ts.mgr.Snapshot(t.Context(), id)
	if st := sess.LastTurn(); st.Status != sessions.TurnStopped {
		t.Errorf("last turn = %+v", st)
	}
}

// TestEditAndResendFromThePage: a user's message has Edit, holding its text as typed; the
// edit goes on in a successor thread and the old one stays in the thread list; an answer
// has no Edit.
func TestEditAndResendFromThePage(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "answer one"}, fakemodel.Turn{Text: "answer two"})
	id, p := ts.session(t)
	j, _ := ts.mgr.Submit(t.Context(), id, model.TextPart("first line\nsecond line"))
	j.Wait(t.Context())
	_, page := ts.do(t, "GET", p, nil, nil)
	action := `action="` + p + `edit/t1/0"`
	if !strings.Contains(page, action) || !strings.Contains(page, ">first line\nsecond line</textarea>") || strings.Count(page, ">Edit</summary>") != 1 {
		t.Fatalf("the page should offer one Edit, on the user's message, with its text:\n%s", page)
	}
	resp, _ := ts.do(t, "POST", p+"edit/t1/0", http.Header{"HX-Request": {"true"}}, url.Values{"text": {"an edited question"}})
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("edit = %d", resp.StatusCode)
	}
	ts.waitIdle(t, id)
	_, page = ts.do(t, "GET", p, nil, nil)
	if !strings.Contains(page, "an edited question") || !strings.Contains(page, "answer two") || strings.Contains(page, "answer one") ||
		!strings.Contains(page, p+"t/t1") {
		t.Errorf("after the edit the page should show the edit and its answer, and list the old thread:\n%s", page)
	}
	if resp, _ := ts.do(t, "POST", p+"edit/t1/0", http.Header{"HX-Request": {"true"}}, url.Values{"text": {"again"}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("editing a message of an earlier thread = %d, want 409", resp.StatusCode)
	}
}

// TestAPIRetry: the API's retry action sends a failed turn again; a session whose last
// turn answered refuses with 409 not_retryable.
func TestAPIRetry(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "Half", Drop: true}, fakemodel.Turn{Text: "whole"})
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c"})
	id := c["session_id"].(string)
	ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "s", "action": "submit", "text": "go"})
	if snap := ts.waitAPIIdle(t, id); snap["last_turn"] != "failed" {
		t.Fatalf("last_turn = %v, want failed", snap["last_turn"])
	}
	if code, out := ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "r", "action": "retry"}); code != 200 || out["result"] != "started" {
		t.Fatalf("retry = %d %v", code, out)
	}
	if snap := ts.waitAPIIdle(t, id); snap["last_turn"] != "done" || snap["answer"] != "whole" {
		t.Errorf("after the retry: %v %v", snap["last_turn"], snap["answer"])
	}
	code, out := ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "r2", "action": "retry"})
	if e, _ := out["error"].(map[string]any); code != 409 || e["code"] != "not_retryable" {
		t.Errorf("a retry of an answered turn = %d %v, want 409 not_retryable", code, out)
	}
}

// TestStopNoteSaysWhatWasCutOff (issue 27, finding 11): a stop while only text streamed
// says the answer was cut off where it was stopped, and nothing of a call that may have
// taken effect; a stop before anything streamed says only that it stopped. (A stop while
// a call ran says that call may have taken effect: TestStoppedToolCardKeepsItsOutput.)
func TestStopNoteSaysWhatWasCutOff(t *testing.T) {
	for _, tt := range []struct {
		name string
		turn fakemodel.Turn
		wait string // the update to stop at
		note string
	}{
		{"text streaming", fakemodel.Turn{Text: strings.Repeat("word ", 400), ChunkSize: 5, DelayMs: 10}, sessions.UpdateTextDelta,
			"Stopped. The answer above was cut off where you stopped it."},
		{"nothing streamed", fakemodel.Turn{HangMs: 10_000, Text: "late"}, sessions.UpdateAccepted, "Stopped.</p>"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, tt.turn)
			id, p := ts.session(t)
			sub := ts.mgr.Subscribe([]string{id}, ts.mgr.EventID())
			defer sub.Close()
			if _, err := ts.mgr.Submit(t.Context(), id, model.TextPart("talk")); err != nil {
				t.Fatal(err)
			}
			for seen := false; !seen; {
				us, err := sub.Next(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				for _, u := range us {
					seen = seen || u.Type == tt.wait
				}
			}
			ts.mgr.Cancel(id, "")
			ts.waitIdle(t, id)
			_, page := ts.do(t, "GET", p, nil, nil)
			if !strings.Contains(page, tt.note) || strings.Contains(page, "may have taken effect") {
				t.Errorf("the stop's note should say %q and nothing of a call that may have taken effect:\n%s", tt.note, noteOf(page))
			}
			if !strings.Contains(page, ">Retry</button>") {
				t.Error("the stopped turn offers no Retry")
			}
		})
	}
}

// TestFailureNotesByKind (issue 27, finding 5): a failed turn's note says what happened by
// its kind, with the provider's words folded under Details; Retry is offered where sending
// the turn again can help (an overloaded gateway, a broken stream) and not where something
// has to be fixed first (a refused credential, a model the gateway does not have).
func TestFailureNotesByKind(t *testing.T) {
	for _, tt := range []struct {
		name  string
		turn  fakemodel.Turn
		note  string
		retry bool
	}{
		{"401", fakemodel.Turn{Status: 401, ErrorBody: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`},
			"refused the credential (401 Unauthorized)", false},
		{"404", fakemodel.Turn{Status: 404, ErrorBody: `{"type":"error","error":{"type":"not_found_error","message":"model: fake-1"}}`},
			"answered 404 Not Found", false},
		{"529", fakemodel.Turn{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded"}, "is overloaded (529 Overloaded)", true},
		{"broken stream", fakemodel.Turn{Text: "Half", Drop: true}, "The model&#39;s answer broke off", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, tt.turn)
			id, p := ts.session(t)
			j, err := ts.mgr.Submit(t.Context(), id, model.TextPart("hello"))
			if err != nil {
				t.Fatal(err)
			}
			j.Wait(t.Context())
			_, page := ts.do(t, "GET", p, nil, nil)
			if !strings.Contains(page, tt.note) || !strings.Contains(page, "<summary>Details</summary>") {
				t.Errorf("the failure's note should say %q, with Details folded:\n%s", tt.note, noteOf(page))
			}
			if got := strings.Contains(page, ">Retry</button>"); got != tt.retry {
				t.Errorf("Retry offered = %v, want %v", got, tt.retry)
			}
		})
	}
}

// noteOf is the part of a page around its end notes, for a failure message.
func noteOf(page string) string {
	if i := strings.Index(page, `class="msg end`); i >= 0 {
		return page[i:min(len(page), i+1500)]
	}
	return "(no end note)"
}
