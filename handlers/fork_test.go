package handlers

import (
	"testing"

	"myco.dev/internal/fakemodel"
)

// TestAPIForkTakesTheNamedModel (issue 27, finding 13): a fork runs on the model its
// create names, not its parent's: the child's snapshot says so and its first request to the
// model sends that model's id. A fork that names none runs on the parent's.
func TestAPIForkTakesTheNamedModel(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "parent answer"}, fakemodel.Turn{Text: "child answer"}, fakemodel.Turn{Text: "second child answer"})
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "parent"})
	parent := c["session_id"].(string)
	ts.call(t, "POST", "/sessions/"+parent+"/actions", map[string]any{"request_id": "p", "action": "submit", "text": "hello"})
	ts.waitAPIIdle(t, parent)
	for i, tt := range []struct {
		name, model, want, wantID string
	}{
		{"named", "other", "other", "other-1"},
		{"unnamed", "", "fake", "fake-1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := map[string]any{"request_id": "fork-" + tt.name, "parent_session": parent, "fork": true}
			if tt.model != "" {
				req["model"] = tt.model
			}
			code, out := ts.call(t, "POST", "/sessions", req)
			if code != 201 {
				t.Fatalf("fork = %d %v", code, out)
			}
			child := out["session_id"].(string)
			if _, snap := ts.call(t, "GET", "/sessions/"+child, nil); snap["model"] != tt.want {
				t.Errorf("the fork's snapshot model = %v, want %s", snap["model"], tt.want)
			}
			ts.call(t, "POST", "/sessions/"+child+"/actions", map[string]any{"request_id": "go", "action": "submit", "text": "go on"})
			if snap := ts.waitAPIIdle(t, child); snap["model"] != tt.want || snap["last_turn"] != "done" {
				t.Errorf("after its turn the fork's snapshot = model %v, last turn %v; want %s, done", snap["model"], snap["last_turn"], tt.want)
			}
			reqs := ts.fake.Requests()
			if len(reqs) != i+2 {
				t.Fatalf("the model got %d requests, want %d", len(reqs), i+2)
			}
			if got := reqs[i+1].JSON()["model"]; got != tt.wantID {
				t.Errorf("the fork's request names model %v, want %s", got, tt.wantID)
			}
		})
	}
}
