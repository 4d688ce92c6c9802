package sessions

import (
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
)

// TestIdleSessionsClose (issue 20): a session with no job, no subscription of its own and
// no live tool handle is closed once idle for IdleClose (its runtime let go, its event ring
// after the grace period), and reopens with its history; beyond IdleKeep idle sessions the
// least recently used close at once. One with a subscriber, or whose tools ran, stays.
func TestIdleSessionsClose(t *testing.T) {
	turn := fakemodel.Turn{Text: "ok"}
	f := newManager(t, ManagerOptions{IdleClose: time.Hour, IdleKeep: 2}, turn, turn, turn, turn, turn,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "x")}}, turn, turn)
	ctx := t.Context()
	run := func(id, text string) { t.Helper(); f.run(t, id, text) }
	var ids []string
	for i := range 4 {
		id, _ := f.m.Create(ctx, CreateOptions{})
		run(id, "hello "+string(rune('a'+i)))
		ids = append(ids, id)
	}
	watched, _ := f.m.Create(ctx, CreateOptions{})
	sub := f.m.Subscribe([]string{watched}, "")
	defer sub.Close()
	run(watched, "watched")
	tooled, _ := f.m.Create(ctx, CreateOptions{})
	run(tooled, "use a tool")
	f.m.closeIdle(ctx, time.Now())
	kept := func(id string) int {
		f.m.bus.mu.Lock()
		defer f.m.bus.mu.Unlock()
		if r := f.m.bus.rings[id]; r != nil {
			return len(r.buf)
		}
		return 0
	}
	if n := kept(ids[0]); n == 0 {
		t.Error("a session closed just now let go of its events at once, want them kept for the grace period")
	}
	live := func(id string) bool {
		f.m.mu.Lock()
		defer f.m.mu.Unlock()
		return f.m.live[id] != nil
	}
	if live(ids[0]) || live(ids[1]) || !live(ids[2]) || !live(ids[3]) {
		t.Errorf("open after the IdleKeep check: %v %v %v %v; want the two least recently used closed", live(ids[0]), live(ids[1]), live(ids[2]), live(ids[3]))
	}
	f.m.closeIdle(ctx, time.Now().Add(2*time.Hour))
	if live(ids[2]) || live(ids[3]) {
		t.Error("sessions idle for longer than IdleClose stayed open")
	}
	if !live(watched) || !live(tooled) {
		t.Errorf("watched open %v, with tools open %v; want both kept", live(watched), live(tooled))
	}
	if n := kept(ids[0]); n != 0 {
		t.Errorf("a session closed for longer than the grace period kept %d events", n)
	}
	// It reopens from disk with its history, and works.
	run(ids[0], "again")
	sess, st, err := f.m.Snapshot(ctx, ids[0])
	if err != nil || len(sess.Latest().Entries) != 4 || st.LastTurn.Answer != "ok" {
		t.Errorf("the reopened session: %v entries, %+v, %v", len(sess.Latest().Entries), st.LastTurn, err)
	}
}

// TestOccupancy: the sessions open in this process and those running a job, which a
// profile's metrics read at scrape time.
func TestOccupancy(t *testing.T) {
	f := newManager(t, ManagerOptions{IdleClose: time.Hour}, fakemodel.Turn{Text: "slow", ChunkSize: 1, DelayMs: 20}, fakemodel.Turn{Text: "ok"})
	ctx := t.Context()
	if open, busy := f.m.Occupancy(); open != 0 || busy != 0 {
		t.Fatalf("Occupancy() of a new service = %d, %d; want 0, 0", open, busy)
	}
	a, _ := f.m.Create(ctx, CreateOptions{})
	b, _ := f.m.Create(ctx, CreateOptions{})
	slow, err := f.m.Submit(ctx, a, model.TextPart("take your time"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slow.Accepted(ctx); err != nil {
		t.Fatal(err)
	}
	if open, busy := f.m.Occupancy(); busy != 1 || open < 1 {
		t.Errorf("Occupancy() while a turn runs = %d, %d; want 1 busy", open, busy)
	}
	slow.Wait(ctx)
	j, err := f.m.Submit(ctx, b, model.TextPart("quick"))
	if err != nil {
		t.Fatal(err)
	}
	j.Wait(ctx)
	if open, busy := f.m.Occupancy(); open != 2 || busy != 0 {
		t.Errorf("Occupancy() after both turns = %d, %d; want 2, 0", open, busy)
	}
	f.m.CloseSession(a)
	if open, _ := f.m.Occupancy(); open != 1 {
		t.Errorf("Occupancy() after a close = %d open, want 1", open)
	}
}
