package sessions

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
	"myco.dev/policy"
)

func bashCall(id, command string) fakemodel.ToolCall {
	in, _ := json.Marshal(map[string]string{"command": command})
	return fakemodel.ToolCall{ID: id, Name: "bash", Args: string(in)}
}

// waitApproval reads sub until an approval_requested update and returns it.
func waitApproval(t *testing.T, sub *Subscription) Update {
	t.Helper()
	us := collect(t, sub, func(u Update) bool { return u.Type == UpdateApprovalRequested })
	return us[len(us)-1]
}

// lastRequestText returns the text of the tool results in the fake's i-th request.
func requestText(t *testing.T, f *mgrFixture, i int) string {
	t.Helper()
	b, _ := json.Marshal(requestMessages(t, f.srv, i))
	return string(b)
}

// TestApprovalAllow: in ask mode a bash call waits; its approval is in the document
// (on disk) before it is announced, the call runs once allowed, and the answer is
// announced and leaves the snapshot.
func TestApprovalAllow(t *testing.T) {
	f := newManager(t, ManagerOptions{Guard: &Guard{Mode: policy.AskMode}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{bashCall("c1", "make test")}}, fakemodel.Turn{Text: "done"})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	sub := f.m.Subscribe([]string{id}, "")
	defer sub.Close()
	j, err := f.m.Submit(ctx, id, model.TextPart("go"))
	if err != nil {
		t.Fatal(err)
	}
	u := waitApproval(t, sub)
	if u.Approval == nil || u.Approval.Command != "make test" || u.Approval.Rule != "bash(make test)" || u.CallID != "c1" {
		t.Fatalf("approval_requested = %+v", u.Approval)
	}
	if s := loadFresh(t, f.store, id); len(s.Approvals) != 1 || s.Approvals[0].Status != ApprovalPending {
		t.Fatalf("on disk: %+v", s.Approvals)
	}
	if f.host.tools.count() != 0 {
		t.Fatal("the call ran before it was allowed")
	}
	if _, _, err := f.m.Act(ctx, id, "r1", ActApprove, `{"Approval":"c1"}`); err != nil {
		t.Fatal(err)
	}
	if res, err := j.Wait(ctx); err != nil || res.Answer != "done" {
		t.Fatalf("Wait: %q, %v", res.Answer, err)
	}
	if f.host.tools.count() != 1 {
		t.Errorf("calls = %d, want 1", f.host.tools.count())
	}
	us := collect(t, sub, func(u Update) bool { return u.Type == UpdateApprovalResolved })
	if r := us[len(us)-1].Approval; r.Status != ApprovalAllowed {
		t.Errorf("resolved: %+v", r)
	}
	if s := loadFresh(t, f.store, id); len(s.Approvals) != 0 {
		t.Errorf("still pending: %+v", s.Approvals)
	}
	// The request id answers again without a second answer.
	if rec, repeat, err := f.m.Act(ctx, id, "r1", ActApprove, `{"Approval":"c1"}`); err != nil || !repeat || rec.Result != ApprovalAllowed {
		t.Errorf("repeat: %+v %v %v", rec, repeat, err)
	}
}

// TestApprovalDenyAlways: a deny tells the model the reason and runs nothing; allow
// always adds a session rule, under which the same command runs without asking.
func TestApprovalDenyAlways(t *testing.T) {
	f := newManager(t, ManagerOptions{Guard: &Guard{Mode: policy.AskMode}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{bashCall("c1", "rm -rf build")}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{bashCall("c2", "go test ./x")}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{bashCall("c3", "go test ./y")}},
		fakemodel.Turn{Text: "done"})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	sub := f.m.Subscribe([]string{id}, "")
	defer sub.Close()
	j, _ := f.m.Submit(ctx, id, model.TextPart("go"))
	waitApproval(t, sub)
	if _, _, err := f.m.Act(ctx, id, "r1", ActDeny, `{"Approval":"c1","Reason":"keep the build"}`); err != nil {
		t.Fatal(err)
	}
	u := waitApproval(t, sub)
	if u.Approval.Rule != "bash(go test *)" {
		t.Errorf("rule = %q", u.Approval.Rule)
	}
	if !strings.Contains(requestText(t, f, 1), "keep the build") {
		t.Errorf("the model was not told the reason: %s", requestText(t, f, 1))
	}
	if _, _, err := f.m.Act(ctx, id, "r2", ActApprove, `{"Approval":"c2","Always":true}`); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if f.host.tools.count() != 2 {
		t.Errorf("calls = %d, want 2 (c2 allowed, c3 by the session rule)", f.host.tools.count())
	}
	if s := loadFresh(t, f.store, id); len(s.Rules) != 1 || s.Rules[0].String() != "bash(go test *)" || s.Rules[0].Source != policy.FromSession {
		t.Errorf("session rules: %+v", s.Rules)
	}
}

// TestApprovalNonInteractive: -p denies what would ask, telling the model why.
func TestApprovalNonInteractive(t *testing.T) {
	f := newManager(t, ManagerOptions{Guard: &Guard{Mode: policy.AskMode, NonInteractive: true}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{bashCall("c1", "make")}}, fakemodel.Turn{Text: "ok"})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	j, _ := f.m.Submit(ctx, id, model.TextPart("go"))
	if _, err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if f.host.tools.count() != 0 || !strings.Contains(requestText(t, f, 1), "non-interactive") {
		t.Errorf("calls %d; request %s", f.host.tools.count(), requestText(t, f, 1))
	}
}

// TestApprovalTimeout: a timeout denies, never allows.
func TestApprovalTimeout(t *testing.T) {
	f := newManager(t, ManagerOptions{Guard: &Guard{Mode: policy.AskMode, Timeout: 100 * time.Millisecond}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{bashCall("c1", "make")}}, fakemodel.Turn{Text: "ok"})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	j, _ := f.m.Submit(ctx, id, model.TextPart("go"))
	if _, err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if f.host.tools.count() != 0 || !strings.Contains(requestText(t, f, 1), "nobody answered") {
		t.Errorf("calls %d; request %s", f.host.tools.count(), requestText(t, f, 1))
	}
}

// TestApprovalRules: the modes and the person's rules decide without asking: full runs,
// a deny rule refuses even there; read-only refuses edits, and bash too where there is no
// sandbox to run it in.
func TestApprovalRules(t *testing.T) {
	deny, _ := policy.ParseRule(policy.Deny, "bash(rm *)", policy.FromConfig)
	edit := fakemodel.ToolCall{ID: "c3", Name: policy.EditorTool, Args: `{"command":"create","path":"/tmp/x","file_text":"x"}`}
	for _, tc := range []struct {
		mode  policy.Mode
		calls int
	}{{policy.Full, 2}, {policy.ReadOnly, 0}} {
		f := newManager(t, ManagerOptions{Guard: &Guard{Mode: tc.mode, Rules: []policy.Rule{deny}}},
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{bashCall("c1", "echo hi"), bashCall("c2", "sudo rm -r x"), edit}}, fakemodel.Turn{Text: "ok"})
		ctx := t.Context()
		id, _ := f.m.Create(ctx, CreateOptions{})
		j, _ := f.m.Submit(ctx, id, model.TextPart("go"))
		if _, err := j.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if got := f.host.tools.count(); got != tc.calls {
			t.Errorf("%s: calls = %d, want %d; %s", tc.mode, got, tc.calls, requestText(t, f, 1))
		}
		if txt := requestText(t, f, 1); !strings.Contains(txt, "bash(rm *)") {
			t.Errorf("%s: the deny rule is not named: %s", tc.mode, txt)
		}
	}
}

// TestApprovalRestart: an approval pending when the service shuts down stays pending;
// the turn ends with the call unrun, and allowing it after the restart runs the call and
// continues the session with its result.
func TestApprovalRestart(t *testing.T) {
	f := newManager(t, ManagerOptions{Guard: &Guard{Mode: policy.AskMode}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{bashCall("c1", "make")}}, fakemodel.Turn{Text: "continued"})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	sub := f.m.Subscribe([]string{id}, "")
	j, _ := f.m.Submit(ctx, id, model.TextPart("go"))
	waitApproval(t, sub)
	sub.Close()
	f.m.Close()
	j.Wait(ctx)

	m2, err := NewManager(ManagerOptions{Store: NewStore(f.store.Dir()), Models: f.m.o.Models, Tools: f.host, Log: testLog(t), Guard: &Guard{Mode: policy.AskMode}})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	s, _, err := m2.Snapshot(ctx, id)
	if err != nil || len(s.Approvals) != 1 {
		t.Fatalf("after the restart: %+v, %v", s.Approvals, err)
	}
	sub2 := m2.Subscribe([]string{id}, "")
	defer sub2.Close()
	if _, _, err := m2.Act(ctx, id, "r1", ActApprove, `{"Approval":"c1"}`); err != nil {
		t.Fatal(err)
	}
	collect(t, sub2, func(u Update) bool { return u.Type == UpdateDone })
	if f.host.tools.count() != 1 {
		t.Errorf("calls = %d, want 1", f.host.tools.count())
	}
	if txt := requestText(t, f, 1); !strings.Contains(txt, "The person allowed your call c1") {
		t.Errorf("the continuation: %s", txt)
	}
	if s, _, _ := m2.Snapshot(ctx, id); len(s.Approvals) != 0 {
		t.Errorf("still pending: %+v", s.Approvals)
	}
}

// TestApprovalChildNoFreer: a child takes its parent's mode and session rules, and asks
// for everything when it works outside a sandboxed parent's directory.
func TestApprovalChildNoFreer(t *testing.T) {
	f := newManager(t, ManagerOptions{Guard: &Guard{Mode: policy.Workspace}})
	ctx := t.Context()
	dir := t.TempDir()
	parent, err := f.m.Create(ctx, CreateOptions{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.m.SetMode(ctx, parent, policy.ReadOnly); err != nil {
		t.Fatal(err)
	}
	inside, _ := f.m.Create(ctx, CreateOptions{Parent: parent, Cwd: dir})
	outside, _ := f.m.Create(ctx, CreateOptions{Parent: parent, Cwd: t.TempDir()})
	for id, want := range map[string]policy.Mode{inside: policy.ReadOnly, outside: policy.AskMode} {
		s, _, err := f.m.Snapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.m.Mode(s); got != want {
			t.Errorf("child %s: mode %s, want %s", id, got, want)
		}
	}
}

// TestApprovalOfGrandchild: a grandchild's waiting call is announced on its parent's and
// its root's streams too, naming the session that asked, and makes both need you in the
// list (each row pointing at the grandchild) until it is answered.
func TestApprovalOfGrandchild(t *testing.T) {
	f := newManager(t, ManagerOptions{Guard: &Guard{Mode: policy.AskMode}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{bashCall("c1", "make test")}}, fakemodel.Turn{Text: "done"})
	ctx := t.Context()
	root, _ := f.m.Create(ctx, CreateOptions{})
	mid, _ := f.m.Create(ctx, CreateOptions{Parent: root})
	leaf, _ := f.m.Create(ctx, CreateOptions{Parent: mid})
	sub := f.m.Subscribe([]string{root}, "")
	defer sub.Close()
	j, err := f.m.Submit(ctx, leaf, model.TextPart("go"))
	if err != nil {
		t.Fatal(err)
	}
	if u := waitApproval(t, sub); u.Session != root || u.Child != leaf || u.Approval == nil || u.Approval.Command != "make test" {
		t.Fatalf("on the root's stream: %+v", u)
	}
	state := func(id string) string {
		s, st, err := f.m.Snapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return f.m.State(s, st)
	}
	if got := state(root); got != StateNeedsYou {
		t.Errorf("the root's own state while the grandchild waits = %s, want needs you", got)
	}
	if list, err := f.m.PendingApprovals(ctx, root); err != nil || len(list) != 1 || list[0].Session != leaf || list[0].ID != "c1" {
		t.Errorf("the root's tree's pending approvals = %+v, %v; want the grandchild's c1", list, err)
	}
	if list, err := f.m.PendingApprovalsBelow(ctx, leaf); err != nil || len(list) != 0 {
		t.Errorf("below the grandchild = %+v, %v; want none (its own are not below it)", list, err)
	}
	rows := func() map[string]Listed {
		list, err := f.m.List(ctx, ListOptions{All: true, IncludeHidden: true})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]Listed{}
		for _, l := range list {
			out[l.ID] = l
		}
		return out
	}
	got := rows()
	for _, id := range []string{root, mid} {
		if l := got[id]; l.State != StateNeedsYou || l.WaitingBelow != leaf {
			t.Errorf("row %s while the grandchild waits: state %s, waiting below %q", id, l.State, l.WaitingBelow)
		}
	}
	if l := got[leaf]; l.State != StateNeedsYou || l.WaitingBelow != "" {
		t.Errorf("the grandchild's row: state %s, waiting below %q", l.State, l.WaitingBelow)
	}
	if _, err := f.m.Resolve(ctx, leaf, Answer{Approval: "c1", Allow: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	us := collect(t, sub, func(u Update) bool { return u.Type == UpdateApprovalResolved })
	if u := us[len(us)-1]; u.Child != leaf || u.Approval.Status != ApprovalAllowed {
		t.Errorf("the answer on the root's stream: %+v", u)
	}
	if got := state(root); got == StateNeedsYou {
		t.Errorf("the root's own state after the answer = %s", got)
	}
	for id, l := range rows() {
		if l.WaitingBelow != "" {
			t.Errorf("row %s still points at %s after the answer", id, l.WaitingBelow)
		}
	}
}
