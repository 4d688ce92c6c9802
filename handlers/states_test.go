package handlers

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
	"myco.dev/sessions"
	"myco.dev/sessions/sessionstest"
	"myco.dev/views"
)

// TestAPIStates (issue 32): every state and the transitions between them, on the
// snapshot, the list (and its ?state= filter), the page's tab title and the tree of
// children: working while a turn runs, done after an answer, needs_you after a stop, after
// a failure Retry can mend and with a queued message behind a stop, failed after one that
// needs a fix first; and the same after a restart (a new service over the same files).
func TestAPIStates(t *testing.T) {
	ts := newTestServer(t,
		fakemodel.Turn{Text: "answered"}, // done
		fakemodel.Turn{Status: 401, ErrorType: "authentication_error", ErrorMessage: "bad key"}, // failed
		fakemodel.Turn{Status: 500, ErrorType: "api_error", ErrorMessage: "oops"},               // needs_you (retryable)
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "work", Args: `{}`}}},   // working, then stopped
		fakemodel.Turn{Text: "after the retry"})
	create := func(rid string) string {
		_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": rid, "title": rid})
		return c["session_id"].(string)
	}
	submit := func(id, rid, text string) {
		if code, out := ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": rid, "action": "submit", "text": text}); code != 200 && code != 202 {
			t.Fatalf("submit to %s = %d %v", id, code, out)
		}
	}
	state := func(id string) string {
		_, snap := ts.call(t, "GET", "/sessions/"+id, nil)
		s, _ := snap["state"].(string)
		return s
	}
	fresh := create("fresh")
	if s := state(fresh); s != sessions.StateDone {
		t.Errorf("a session without turns is %q, want done", s)
	}
	done, failed, retryable, stopped := create("done"), create("failed"), create("retryable"), create("stopped")
	submit(done, "d", "hi")
	ts.waitAPIIdle(t, done)
	submit(failed, "f", "hi")
	ts.waitAPIIdle(t, failed)
	submit(retryable, "r", "hi")
	ts.waitAPIIdle(t, retryable)

	started := make(chan struct{})
	ts.tools.f = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		close(started)
		<-ctx.Done()
		return model.ToolResult{CallID: c.ID}
	}
	submit(stopped, "s", "work")
	<-started
	if s := state(stopped); s != sessions.StateWorking {
		t.Errorf("a session whose turn runs is %q, want working", s)
	}
	_, list := ts.call(t, "GET", "/sessions?state=working", nil)
	if rows := list["sessions"].([]any); len(rows) != 1 || rows[0].(map[string]any)["session_id"] != stopped {
		t.Errorf("?state=working = %v, want the running session", rows)
	}
	// A message sent while it runs waits in the queue; the stop leaves it waiting.
	ts.do(t, "POST", "/profiles/default/s/"+stopped+"/", nil, map[string][]string{"text": {"and then this"}})
	ts.call(t, "POST", "/sessions/"+stopped+"/cancel", map[string]any{})
	ts.waitAPIIdle(t, stopped)

	want := map[string]string{fresh: sessions.StateDone, done: sessions.StateDone, failed: sessions.StateFailed,
		retryable: sessions.StateNeedsYou, stopped: sessions.StateNeedsYou}
	check := func(when string, call func(string, string) (int, map[string]any)) {
		t.Helper()
		for id, w := range want {
			_, snap := call("GET", "/sessions/"+id)
			if snap["state"] != w {
				t.Errorf("%s: %s (%s) is %v, want %s", when, snap["title"], id, snap["state"], w)
			}
		}
		_, list := call("GET", "/sessions?state=needs_you,failed")
		var got []string
		for _, r := range list["sessions"].([]any) {
			got = append(got, r.(map[string]any)["title"].(string))
		}
		sort.Strings(got)
		if strings.Join(got, " ") != "failed retryable stopped" {
			t.Errorf("%s: ?state=needs_you,failed lists %v, want failed, retryable and stopped", when, got)
		}
		_, all := call("GET", "/sessions")
		for _, r := range all["sessions"].([]any) {
			row := r.(map[string]any)
			if row["state"] != want[row["session_id"].(string)] {
				t.Errorf("%s: the list's row of %s is %v, want %s", when, row["title"], row["state"], want[row["session_id"].(string)])
			}
		}
	}
	check("live", func(m, p string) (int, map[string]any) { return ts.call(t, m, p, nil) })
	if _, page := ts.do(t, "GET", "/profiles/default/s/"+retryable+"/", nil, nil); !strings.Contains(page, ">(needs you) retryable · myco</title>") {
		t.Errorf("the tab title of a session that needs you does not say so")
	}
	if _, page := ts.do(t, "GET", "/profiles/default/", nil, nil); !strings.Contains(page, `class="state needs_you"`) || !strings.Contains(page, `class="state failed"`) {
		t.Errorf("the list does not show the states")
	}
	if code, out := ts.call(t, "GET", "/sessions?state=asleep", nil); code != 400 || errCode(out) != "invalid_field" {
		t.Errorf("?state=asleep = %d %v, want 400 invalid_field", code, out)
	}

	// A restart: a new service over the same files tells the same states.
	mgr := sessionstest.Manager(t, sessions.ManagerOptions{Store: sessions.NewStore(ts.mgr.Store().Dir()), Dir: ts.dir})
	check("after a restart", func(_, p string) (int, map[string]any) {
		if id, ok := strings.CutPrefix(p, "/sessions/"); ok {
			sess, st, err := mgr.Snapshot(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			return 200, map[string]any{"state": mgr.State(sess, st), "title": sess.Title}
		}
		var o sessions.ListOptions
		if strings.Contains(p, "state=") {
			o.States = []string{sessions.StateNeedsYou, sessions.StateFailed}
		}
		list, err := mgr.List(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		var rows []any
		for _, l := range list {
			rows = append(rows, map[string]any{"session_id": l.ID, "title": l.Title, "state": l.State})
		}
		return 200, map[string]any{"sessions": rows}
	})

	// A retry mends the stopped one: it runs on, answers, and is done.
	ts.tools.f = nil
	ts.call(t, "POST", "/sessions/"+retryable+"/actions", map[string]any{"request_id": "again", "action": "retry"})
	ts.waitAPIIdle(t, retryable)
	if s := state(retryable); s != sessions.StateDone {
		t.Errorf("after a retry that answered: %q, want done", s)
	}
}

// TestStateEvents (issue 32): the states stream, which the pages' notifications follow,
// tells each change of a session's state once, with the session's title, its page and
// why: working, then done with the answer's first line; then failed with the failure's
// words; then needs you after a failure a Retry mends.
func TestStateEvents(t *testing.T) {
	ts := newTestServer(t,
		fakemodel.Turn{Text: "All tests pass.\n\nThe details follow."},
		fakemodel.Turn{Status: 401, ErrorType: "authentication_error", ErrorMessage: "bad key"},
		fakemodel.Turn{Status: 500, ErrorType: "api_error", ErrorMessage: "oops"})
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "c", "title": "Fix the build"})
	id := c["session_id"].(string)
	events := ts.stream(t, "/profiles/default"+views.StatesPath, nil)
	for i, tt := range []struct {
		want []string // the states told, in order
		why  string   // what the last one says
	}{
		{[]string{sessions.StateWorking, sessions.StateDone}, "All tests pass."},
		{[]string{sessions.StateWorking, sessions.StateFailed}, "Its turn failed: "},
		{[]string{sessions.StateWorking, sessions.StateNeedsYou}, "Its turn failed: "},
	} {
		if code, out := ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": strconv.Itoa(i), "action": "submit", "text": "go"}); code != 200 && code != 202 {
			t.Fatalf("submit = %d %v", code, out)
		}
		var got []string
		var last views.StateChange
		for len(got) < len(tt.want) {
			ev := events.next(t)
			if ev.event == views.EventPing {
				continue
			}
			if ev.event != views.EventState || ev.id == "" {
				t.Fatalf("event %q (id %q), want %q with an id", ev.event, ev.id, views.EventState)
			}
			if err := json.Unmarshal([]byte(ev.data), &last); err != nil {
				t.Fatalf("the event's data %q: %v", ev.data, err)
			}
			if last.Session != id || last.URL != "/profiles/default/s/"+id+"/" || last.Title != "Fix the build" {
				t.Errorf("turn %d: %+v, want the session's id, page and title", i, last)
			}
			got = append(got, last.State)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("turn %d: the states told = %v, want %v", i, got, tt.want)
		}
		if !strings.HasPrefix(last.Why, tt.why) {
			t.Errorf("turn %d: why = %q, want it to start %q", i, last.Why, tt.why)
		}
	}
}
