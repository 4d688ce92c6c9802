package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
)

// busyUntilStopped makes the fixture's tool run until its turn is stopped; the channel is
// closed once it has started.
func (f *mgrFixture) busyUntilStopped() <-chan struct{} {
	started := make(chan struct{})
	f.host.tools.run = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		close(started)
		<-ctx.Done()
		return model.ToolResult{CallID: c.ID}
	}
	return started
}

// waitSettled waits until session id's queue holds n messages and nothing runs on it: it
// looks again after each update of the session (a queue change and a job's end are both
// published).
func waitSettled(t *testing.T, m *Manager, id string, n int) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	sub := m.Subscribe([]string{id}, m.EventID()) // before the first look: no update is missed
	defer sub.Close()
	for {
		sess, st, err := m.Snapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Busy && len(sess.Queue) == n {
			return sess
		}
		if _, err := sub.Next(ctx); err != nil {
			t.Fatalf("queue %d, busy %v; want %d queued and idle (%v)", len(sess.Queue), st.Busy, n, err)
		}
	}
}

// TestQueuedMessagesRunInOrder: messages sent while a turn runs wait in the queue, which is
// saved with the session, and run in order once the turn ends; an edit before its turn
// counts, a withdrawn one never runs, and each leaves the queue as its turn accepts it.
func TestQueuedMessagesRunInOrder(t *testing.T) {
	f := newManager(t, ManagerOptions{},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "long")}},
		fakemodel.Turn{Text: "first answer"},
		fakemodel.Turn{Text: "second answer"},
		fakemodel.Turn{Text: "third answer"})
	started, release := make(chan struct{}), make(chan struct{})
	f.host.tools.run = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		close(started)
		<-release // the turn runs until the queue is set
		return model.ToolResult{CallID: c.ID, Text: "done"}
	}
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	if _, err := f.m.Submit(ctx, id, model.TextPart("first")); err != nil {
		t.Fatal(err)
	}
	<-started
	a, err := f.m.Enqueue(ctx, id, model.TextPart("second, as first typed"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.m.Enqueue(ctx, id, model.TextPart("never"))
	c, _ := f.m.Enqueue(ctx, id, model.TextPart("third"))
	if q := loadFresh(t, f.store, id).Queue; len(q) != 3 || q[0].ID != a.ID {
		t.Fatalf("the saved queue = %+v, want three messages in order", q)
	}
	if err := f.m.EditQueued(ctx, id, a.ID, "second"); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Unqueue(ctx, id, b.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Unqueue(ctx, id, b.ID); !errors.Is(err, ErrNotQueued) {
		t.Errorf("withdrawing twice = %v, want ErrNotQueued", err)
	}
	close(release)
	sess := waitSettled(t, f.m, id, 0)
	var inputs []string
	for _, e := range sess.Latest().Entries {
		if e.AcceptedAt != nil {
			inputs = append(inputs, e.Message.Text())
		}
	}
	if got := strings.Join(inputs, "|"); got != "first|second|third" {
		t.Errorf("the turns' inputs = %q, want first|second|third", got)
	}
	if st := sess.LastTurn(); st.Answer != "third answer" {
		t.Errorf("last answer = %q", st.Answer)
	}
	if err := f.m.EditQueued(ctx, id, c.ID, "late"); !errors.Is(err, ErrNotQueued) {
		t.Errorf("editing a message that ran = %v, want ErrNotQueued", err)
	}
}

// TestQueueRunsAfterStop: Stop stops the running turn only; the queue runs on.
func TestQueueRunsAfterStop(t *testing.T) {
	f := newManager(t, ManagerOptions{},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "long")}},
		fakemodel.Turn{Text: "queued answer"})
	started := f.busyUntilStopped()
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	f.m.Submit(ctx, id, model.TextPart("first"))
	<-started
	if _, err := f.m.Enqueue(ctx, id, model.TextPart("next")); err != nil {
		t.Fatal(err)
	}
	f.m.Cancel(id, "")
	sess := waitSettled(t, f.m, id, 0)
	if st := sess.LastTurn(); st.Status != TurnDone || st.Answer != "queued answer" {
		t.Errorf("last turn = %+v, want the queued message answered", st)
	}
}

// TestEnqueueWhenIdleRunsAtOnce: a message queued on an idle session runs at once.
func TestEnqueueWhenIdleRunsAtOnce(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{Text: "answered"})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	if _, err := f.m.Enqueue(ctx, id, model.TextPart("hello")); err != nil {
		t.Fatal(err)
	}
	if sess := waitSettled(t, f.m, id, 0); sess.LastTurn().Answer != "answered" {
		t.Errorf("last turn = %+v", sess.LastTurn())
	}
	if _, err := f.m.Enqueue(ctx, id, model.TextPart("  ")); err == nil {
		t.Error("an empty message was queued")
	}
}

// TestQueueIsBounded: a queue holds at most maxQueued messages; the next is refused.
func TestQueueIsBounded(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "long")}})
	started := f.busyUntilStopped()
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	j, _ := f.m.Submit(ctx, id, model.TextPart("first"))
	<-started
	var ids []string
	for range maxQueued {
		q, err := f.m.Enqueue(ctx, id, model.TextPart("more"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, q.ID)
	}
	if _, err := f.m.Enqueue(ctx, id, model.TextPart("one too many")); !errors.Is(err, ErrQueueFull) {
		t.Errorf("message %d = %v, want ErrQueueFull", maxQueued+1, err)
	}
	for _, q := range ids {
		f.m.Unqueue(ctx, id, q)
	}
	f.m.Cancel(id, "")
	j.Wait(ctx)
}
