package handlers

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/humanize"
	"myco.dev/sessions"
	"myco.dev/sessions/sessionstest"
)

// priced gives ts's catalog prices for "fake" (3, 15, 0.3 and 3.75 a million tokens) and
// none for "other".
func (ts *testServer) priced(t testing.TB) {
	t.Helper()
	m := sessionstest.NewModels(ts.client, "fake", "other")
	m.Priced = map[string]sessions.Prices{"fake": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}}
	ts.mgr.SetModels(m)
}

func usageCost(u fakemodel.Usage) float64 {
	return (float64(u.Input)*3 + float64(u.Output)*15 + float64(u.CacheRead)*0.3 + float64(u.CacheWrite)*3.75) / 1e6
}

// TestAPICost (issue 32): the snapshot's cost is the session's own, each child's in
// children counts its descendants, and the tree's adds them all; the step and done
// events carry theirs; the page's status bar and tree say them; a session whose model
// has no prices says its cost is unknown, never 0.
func TestAPICost(t *testing.T) {
	parentUse := fakemodel.Usage{Input: 100, Output: 10, CacheRead: 1000, CacheWrite: 500}
	childUse := fakemodel.Usage{Input: 300, Output: 40, CacheRead: 2000}
	ts := newTestServer(t,
		fakemodel.Turn{Text: "spawning", ToolCalls: []fakemodel.ToolCall{{ID: "spawn", Name: "work", Args: `{}`}}, Usage: parentUse},
		fakemodel.Turn{Text: "child answer", Usage: childUse},
		fakemodel.Turn{Text: "parent answer", Usage: parentUse},
		fakemodel.Turn{Text: "unpriced", Usage: childUse})
	ts.priced(t)
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "parent"})
	parent := c["session_id"].(string)
	var child string
	ts.tools.f = func(ctx context.Context, call model.ToolCall) model.ToolResult {
		_, out := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "child", "parent_session": parent})
		child = out["session_id"].(string)
		ts.call(t, "POST", "/sessions/"+child+"/actions", map[string]any{"request_id": "task", "action": "submit", "text": "work"})
		ts.waitAPIIdle(t, child)
		return model.ToolResult{CallID: call.ID, Text: "ok"}
	}
	cursor := ts.mgr.EventID()
	ts.call(t, "POST", "/sessions/"+parent+"/actions", map[string]any{"request_id": "go", "action": "submit", "text": "delegate"})
	snap := ts.waitAPIIdle(t, parent)

	own, kid := 2*usageCost(parentUse), usageCost(childUse)
	checkCost(t, "the parent's cost", snap["cost"], own, true)
	checkCost(t, "the tree's cost", snap["tree"].(map[string]any)["cost"], own+kid, true)
	kids := snap["children"].([]any)
	if len(kids) != 1 {
		t.Fatalf("children = %v", kids)
	}
	checkCost(t, "the child's cost", kids[0].(map[string]any)["cost"], kid, true)

	s := ts.stream(t, "/profiles/default/api/events?session="+parent+"&after="+cursor, nil)
	var steps int
	for {
		var u map[string]any
		if err := json.Unmarshal([]byte(s.next(t).data), &u); err != nil {
			t.Fatal(err)
		}
		if u["type"] == "step" {
			steps++
			checkCost(t, "a step event's cost", u["cost"], usageCost(parentUse), true)
		}
		if u["type"] == "done" {
			checkCost(t, "the done event's cost", u["cost"], own, true)
			break
		}
	}
	if steps != 2 {
		t.Errorf("%d step events, want 2", steps)
	}

	_, page := ts.do(t, "GET", "/profiles/default/s/"+parent+"/", nil, nil)
	for _, want := range []string{`id="session-cost"`, humanize.Cost(own, true) + "</span>", "tokens · " + humanize.Cost(own+kid, true) + " ·"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}

	// A model without prices: unknown, not 0.
	ts.call(t, "POST", "/sessions/"+parent+"/actions", map[string]any{"request_id": "switch", "action": "select_model", "model": "other"})
	ts.call(t, "POST", "/sessions/"+parent+"/actions", map[string]any{"request_id": "go2", "action": "submit", "text": "more"})
	snap = ts.waitAPIIdle(t, parent)
	checkCost(t, "a cost with unpriced tokens", snap["cost"], own, false)
	_, page = ts.do(t, "GET", "/profiles/default/s/"+parent+"/", nil, nil)
	if !strings.Contains(page, "cost unknown") {
		t.Errorf("the page of a session with unpriced tokens does not say cost unknown")
	}
}

func checkCost(t *testing.T, what string, v any, amount float64, known bool) {
	t.Helper()
	c, _ := v.(map[string]any)
	got, _ := c["amount"].(float64)
	if c == nil || c["known"] != known || math.Abs(got-amount) > 1e-12 {
		t.Errorf("%s = %v, want amount %g, known %v", what, v, amount, known)
	}
}

// TestAPIBudget (issue 32): a session created with max_cost stops its turn at the next
// model request once its tree (its children included) cost that much: last_error says
// budget_reached in plain words and the tool call that ran is kept; a child cannot be
// created under it (409 budget_reached); a retry with a higher max_cost goes on.
func TestAPIBudget(t *testing.T) {
	use := fakemodel.Usage{Input: 1000, Output: 100} // 0.0045 at the fake's prices
	ts := newTestServer(t,
		fakemodel.Turn{Text: "spawning", ToolCalls: []fakemodel.ToolCall{{ID: "spawn", Name: "work", Args: `{}`}}, Usage: use},
		fakemodel.Turn{Text: "child answer", Usage: use},
		fakemodel.Turn{Text: "the answer", Usage: use})
	ts.priced(t)
	if code, out := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "bad", "max_cost": -1}); code != 400 || errCode(out) != "invalid_field" {
		t.Errorf("max_cost -1 = %d %v, want 400 invalid_field", code, out)
	}
	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "root", "max_cost": 0.008})
	root := c["session_id"].(string)
	var child string
	ts.tools.f = func(ctx context.Context, call model.ToolCall) model.ToolResult {
		_, out := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "child", "parent_session": root})
		child = out["session_id"].(string)
		ts.call(t, "POST", "/sessions/"+child+"/actions", map[string]any{"request_id": "task", "action": "submit", "text": "work"})
		ts.waitAPIIdle(t, child)
		return model.ToolResult{CallID: call.ID, Text: "worked"}
	}
	ts.call(t, "POST", "/sessions/"+root+"/actions", map[string]any{"request_id": "go", "action": "submit", "text": "delegate"})
	snap := ts.waitAPIIdle(t, root)
	le, _ := snap["last_error"].(map[string]any)
	if snap["last_turn"] != "failed" || le["code"] != "budget_reached" || !strings.Contains(le["message"].(string), "reached its budget of $0.008") {
		t.Fatalf("after the budget: last_turn %v, last_error %v", snap["last_turn"], le)
	}
	checkCost(t, "the tree's cost", snap["tree"].(map[string]any)["cost"], 2*usageCost(use), true)
	if msgs, _ := json.Marshal(snap["messages"]); !strings.Contains(string(msgs), `"status":"ok"`) {
		t.Errorf("the tool call that ran before the budget stopped the turn is lost: %s", msgs)
	}

	code, out := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "child2", "parent_session": root})
	if code != 409 || errCode(out) != "budget_reached" {
		t.Errorf("a child under a tree over its budget = %d %v, want 409 budget_reached", code, out)
	}
	code, out = ts.call(t, "POST", "/sessions", map[string]any{"request_id": "grandchild", "parent_session": child})
	if code != 409 || errCode(out) != "budget_reached" {
		t.Errorf("a grandchild under a tree over its budget = %d %v, want 409 budget_reached", code, out)
	}

	if _, page := ts.do(t, "GET", "/profiles/default/s/"+root+"/", nil, nil); !strings.Contains(page, `name="max_cost"`) || !strings.Contains(page, "reached its budget") {
		t.Errorf("the page does not offer a retry with a higher budget")
	}
	ts.call(t, "POST", "/sessions/"+root+"/actions", map[string]any{"request_id": "raise", "action": "retry", "max_cost": 1})
	snap = ts.waitAPIIdle(t, root)
	if snap["last_turn"] != "done" || snap["answer"] != "the answer" {
		t.Errorf("after a retry with a higher budget: last_turn %v, answer %v", snap["last_turn"], snap["answer"])
	}
}
