package sessions

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
)

// testModels is a catalog of agent configurations by key.
type testModels struct {
	def  string
	cfgs map[string]AgentConfig
}

func (c testModels) Default() string { return c.def }

func (c testModels) Agent(key string, blocks []string) (AgentConfig, error) {
	cfg, ok := c.cfgs[key]
	if !ok {
		return AgentConfig{}, fmt.Errorf("unknown model %q", key)
	}
	cfg.Options.System += strings.Join(blocks, "\n")
	return cfg, nil
}

// testHost hands out one fakeTools to every owner and records releases.
type testHost struct {
	tools *fakeTools

	mu       sync.Mutex // guards released
	released []string
}

func (h *testHost) Tools(string, string) Tools { return h.tools }
func (h *testHost) Release(owner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released = append(h.released, owner)
}

var _ Releaser = (*testHost)(nil)

type mgrFixture struct {
	m     *Manager
	srv   *fakemodel.Server
	host  *testHost
	store *Store
}

func newManager(t *testing.T, o ManagerOptions, turns ...fakemodel.Turn) *mgrFixture {
	t.Helper()
	srv, client := startModel(t, turns...)
	f := &mgrFixture{srv: srv, host: &testHost{tools: &fakeTools{}}, store: NewStore(t.TempDir())}
	cfg := func(api string) AgentConfig {
		return AgentConfig{Options: agent.Options{Model: client, APIModel: api, System: "You are a test agent.", MaxOutputTokens: 1000},
			ModelKey: api, Protocol: "anthropic-messages"}
	}
	o.Store, o.Tools, o.Log = f.store, f.host, testLog(t)
	o.Models = testModels{def: "fake", cfgs: map[string]AgentConfig{"fake": cfg("fake"), "other": cfg("other")}}
	m, err := NewManager(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	f.m = m
	return f
}

// collect reads sub until an update of type typ for session id arrives, and returns all.
func collect(t *testing.T, sub *Subscription, until func(Update) bool) []Update {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out []Update
	for {
		us, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("Next: %v after %v", err, types(out))
		}
		for _, u := range us {
			out = append(out, u)
			if until(u) {
				return out
			}
		}
	}
}

func types(us []Update) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Type)
	}
	return out
}

func idle(u Update) bool { return u.Type == UpdateState && u.Busy != nil && !*u.Busy }

func TestManagerTurn(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "x")}}, fakemodel.Turn{Text: "all done"})
	ctx := t.Context()
	id, err := f.m.Create(ctx, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sub := f.m.Subscribe([]string{id}, "")
	defer sub.Close()
	j, err := f.m.Submit(ctx, id, model.TextPart("do the \x1b]0;work\x07\nplease"))
	if err != nil {
		t.Fatal(err)
	}
	at, err := j.Accepted(ctx)
	if err != nil || at.IsZero() {
		t.Fatalf("Accepted = %v, %v", at, err)
	}
	res, err := j.Wait(ctx)
	if err != nil || res.Answer != "all done" {
		t.Fatalf("Wait = %q, %v; want the answer", res.Answer, err)
	}
	got := types(collect(t, sub, idle))
	want := []string{UpdateState, UpdateMeta, UpdateAccepted, UpdateStep, UpdateCheckpoint, UpdateToolStarted, UpdateToolFinished, UpdateCheckpoint, UpdateTextDelta, UpdateStep, UpdateCheckpoint, UpdateDone, UpdateState}
	got = slices.DeleteFunc(got, func(s string) bool { return s == UpdateTextDelta })
	want = slices.DeleteFunc(want, func(s string) bool { return s == UpdateTextDelta })
	if !slices.Equal(got, want) {
		t.Errorf("updates = %v, want %v", got, want)
	}
	sess, st, err := f.m.Snapshot(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Title != "do the  ]0;work" && sess.Title != "do the ]0;work" {
		t.Errorf("title = %q, want the first line without control characters", sess.Title)
	}
	if st.Busy || st.Model != "fake" {
		t.Errorf("status = %+v, want idle on model fake", st)
	}
	if n := len(sess.Latest().Entries); n != 4 {
		t.Errorf("entries = %d, want 4 (input, call, result, answer)", n)
	}
}

// stuckTool makes every tool call run until its turn is stopped; the channel closes when
// the first has begun.
// run submits text to session id and waits for its turn's end.
func (f *mgrFixture) run(t testing.TB, id, text string) {
	t.Helper()
	j, err := f.m.Submit(t.Context(), id, model.TextPart(text))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func (f *mgrFixture) stuckTool() <-chan struct{} {
	started := make(chan struct{})
	var once sync.Once
	f.host.tools.run = func(ctx context.Context, call model.ToolCall) model.ToolResult {
		once.Do(func() { close(started) })
		<-ctx.Done()
		return model.ToolResult{CallID: call.ID, Text: "interrupted"}
	}
	return started
}

func TestManagerBusyAndStop(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "slow")}}, fakemodel.Turn{Text: "never"})
	started := f.stuckTool()
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	j, err := f.m.Submit(ctx, id, model.TextPart("go"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	_, err = f.m.Submit(ctx, id, model.TextPart("again"))
	var busy *BusyError
	if !errors.As(err, &busy) || busy.Job != JobTurn || !errors.Is(err, ErrBusy) {
		t.Fatalf("Submit while busy = %v, want a BusyError for the turn", err)
	}
	if _, err := f.m.Compact(ctx, id); !errors.Is(err, ErrBusy) {
		t.Fatalf("Compact while busy = %v, want ErrBusy", err)
	}
	if !f.m.Cancel(id, "") {
		t.Fatal("Stop = false, want true")
	}
	if _, err := j.Wait(ctx); !errors.Is(err, ErrStopped) {
		t.Fatalf("Wait = %v, want ErrStopped", err)
	}
	if f.m.Cancel(id, "") {
		t.Error("Stop of an idle session = true")
	}
	sess := loadFresh(t, f.store, id)
	th := sess.Latest()
	if th.LastTurn() != TurnCancelled {
		t.Errorf("last turn = %q, want cancelled", th.LastTurn())
	}
	last := th.Entries[len(th.Entries)-1].Message
	if len(last.Parts) == 0 || last.Parts[0].ToolResult == nil || !last.Parts[0].ToolResult.Unknown {
		t.Errorf("last message = %+v, want an unknown outcome", last)
	}
}

func TestManagerBusyElsewhere(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{Text: "hi"})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	other := NewStore(f.store.Dir()) // another process, as far as the locks go
	unlock, err := other.lockSession(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.m.Submit(ctx, id, model.TextPart("hi"))
	var busy *BusyError
	if !errors.As(err, &busy) || busy.Holder == "" {
		t.Fatalf("Submit while another process holds the session = %v, want a BusyError naming the holder", err)
	}
	if _, st, _ := f.m.Snapshot(ctx, id); st.Elsewhere == "" {
		t.Errorf("Snapshot status = %+v, want Elsewhere set", st)
	}
	unlock()
	j, err := f.m.Submit(ctx, id, model.TextPart("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestManagerCloseStopsAndReleases(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "slow")}}, fakemodel.Turn{Text: "never"})
	started := f.stuckTool()
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	j, err := f.m.Submit(ctx, id, model.TextPart("go"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	owner := f.m.Owner(id)
	f.m.Close()
	if _, err := j.Wait(ctx); !errors.Is(err, ErrShutdown) {
		t.Errorf("Wait after Close = %v, want ErrShutdown", err)
	}
	if !slices.Contains(f.host.released, owner) {
		t.Errorf("released = %v, want %s", f.host.released, owner)
	}
	if loadFresh(t, f.store, id).Latest().LastTurn() != TurnCancelled {
		t.Error("the turn was not recorded as cancelled")
	}
	if _, err := f.m.Submit(ctx, id, model.TextPart("more")); !errors.Is(err, ErrShutdown) {
		t.Errorf("Submit after Close = %v, want ErrShutdown", err)
	}
}

func TestManagerSelectModel(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{Text: "one"}, fakemodel.Turn{Text: "two"})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	if err := f.m.SelectModel(ctx, id, "nope"); err == nil {
		t.Fatal("SelectModel(nope) = nil, want an error")
	}
	run := func(text string) { t.Helper(); f.run(t, id, text) }
	run("first")
	if err := f.m.SelectModel(ctx, id, "other"); err != nil {
		t.Fatal(err)
	}
	run("second")
	reqs := f.srv.Requests()
	if got := reqs[1].JSON()["model"]; got != "other" {
		t.Errorf("second request's model = %v, want other", got)
	}
	if _, st, _ := f.m.Snapshot(ctx, id); st.Model != "other" {
		t.Errorf("status model = %q, want other", st.Model)
	}
	if k := loadFresh(t, f.store, id).ModelKey(); k != "other" {
		t.Errorf("saved model key = %q, want other", k)
	}
}

// listedModels is a catalog that lists its models.
type listedModels struct{ testModels }

func (c listedModels) List() []ModelInfo {
	return []ModelInfo{{Key: "fake", ContextWindow: 1000}, {Key: "other", ContextWindow: 2000}}
}

// TestManagerModels: the service tells the front ends the catalog's models, its default
// and one model's facts, from a catalog that lists its models or from one that does not.
func TestManagerModels(t *testing.T) {
	f := newManager(t, ManagerOptions{})
	if got, want := f.m.Models(), []ModelInfo{{Key: "fake"}}; !slices.Equal(got, want) {
		t.Errorf("Models() = %+v, want the default alone %+v", got, want)
	}
	if got := f.m.DefaultModel(); got != "fake" {
		t.Errorf("DefaultModel() = %q, want fake", got)
	}
	if _, err := f.m.Model("nope"); err == nil {
		t.Error("Model(nope) = nil error, want the catalog's")
	}
	listed := newManager(t, ManagerOptions{})
	listed.m.SetModels(listedModels{listed.m.models().(testModels)})
	if got := listed.m.Models(); len(got) != 2 || got[1] != (ModelInfo{Key: "other", ContextWindow: 2000}) {
		t.Errorf("Models() = %+v, want the catalog's list", got)
	}
}

func TestManagerList(t *testing.T) {
	f := newManager(t, ManagerOptions{})
	ctx := t.Context()
	a, _ := f.m.Create(ctx, CreateOptions{Title: "Fix the parser"})
	b, _ := f.m.Create(ctx, CreateOptions{Title: "Write docs"})
	c, _ := f.m.Create(ctx, CreateOptions{Title: "child", Parent: a, Hidden: true})
	if err := f.m.SetArchived(ctx, b, true); err != nil {
		t.Fatal(err)
	}
	ids := func(o ListOptions) []string {
		l, err := f.m.List(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range l {
			out = append(out, s.ID)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s ...string) []string { slices.Sort(s); return s }
	for _, tt := range []struct {
		name string
		o    ListOptions
		want []string
	}{
		{"active", ListOptions{}, sorted(a)},
		{"archived", ListOptions{Archived: true}, sorted(b)},
		{"all", ListOptions{All: true}, sorted(a, b)},
		{"hidden", ListOptions{All: true, IncludeHidden: true}, sorted(a, b, c)},
		{"children", ListOptions{Parent: a}, sorted(c)},
		{"query", ListOptions{All: true, Query: "PARSER"}, sorted(a)},
	} {
		if got := ids(tt.o); !slices.Equal(got, tt.want) {
			t.Errorf("%s: List = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestManagerDeltasCoalesced(t *testing.T) {
	text := strings.Repeat("word ", 200)
	f := newManager(t, ManagerOptions{DeltaEvery: time.Hour}, fakemodel.Turn{Text: text, ChunkSize: 3})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	sub := f.m.Subscribe([]string{id}, "")
	defer sub.Close()
	j, err := f.m.Submit(ctx, id, model.TextPart("talk"))
	if err != nil {
		t.Fatal(err)
	}
	j.Wait(ctx)
	collect(t, sub, idle)
	var deltas []Update
	for _, u := range f.m.bus.rings[id].after(0, nil) {
		if u.Type == UpdateTextDelta {
			deltas = append(deltas, u)
		}
	}
	var got string
	for _, d := range deltas {
		got += d.Text
	}
	if got != text {
		t.Errorf("coalesced text = %q, want the whole answer", got)
	}
	// The first delta goes out at once, the rest wait for the interval or the next event.
	if len(deltas) != 2 {
		t.Errorf("%d delta updates for %d bytes in chunks of 3, want 2", len(deltas), len(text))
	}
}

func TestSubscriptionReplay(t *testing.T) {
	b := newBus()
	for i := range 5 {
		b.publish(Update{Type: UpdateNotice, Session: "s1", Text: fmt.Sprint(i)})
	}
	ctx := t.Context()
	mid := b.id(2)
	sub := b.subscribe([]string{"s1"}, mid)
	us, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(us) != 3 || us[0].Text != "2" || us[2].Seq != 5 {
		t.Errorf("replay after seq 2 = %+v, want events 3..5", us)
	}
	if sub.Cursor() != b.id(5) {
		t.Errorf("cursor = %s, want %s", sub.Cursor(), b.id(5))
	}
	for _, bad := range []string{"otherboot-3", "garbage", b.id(99)} {
		s := b.subscribe([]string{"s1"}, bad)
		us, _ := s.Next(ctx)
		if len(us) != 1 || us[0].Type != UpdateReset || us[0].Session != "s1" {
			t.Errorf("subscribe after %q: %+v, want one reset", bad, us)
		}
	}
	// A cursor that fell out of the ring gets a reset for that session only.
	for i := range ringSize + 10 {
		b.publish(Update{Type: UpdateNotice, Session: "s2", Text: fmt.Sprint(i)})
	}
	b.publish(Update{Type: UpdateNotice, Session: "s1", Text: "late"})
	old := b.subscribe(nil, b.id(5))
	us, _ = old.Next(ctx)
	if len(us) != 2 || us[0].Type != UpdateReset || us[0].Session != "s2" || us[1].Text != "late" {
		t.Errorf("behind the ring: %v, want a reset of s2 then s1's late event", us)
	}
}

func TestSubscriptionNeverBlocksPublisher(t *testing.T) {
	b := newBus()
	sub := b.subscribe(nil, "")
	defer sub.Close()
	done := make(chan struct{})
	go func() {
		for range 10 * ringSize {
			b.publish(Update{Type: UpdateTextDelta, Session: "s", Text: "x"})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("publish blocked on a subscriber that does not read")
	}
}

// TestChildIdentityAfterRestart creates a forked child, restarts the service before the
// child's first submission, and finds the child's own identity (its id, its parent) in
// the runtime facts of its first request.
func TestChildIdentityAfterRestart(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{Text: "parent answer"}, fakemodel.Turn{Text: "child answer"})
	ctx := t.Context()
	parent, _ := f.m.Create(ctx, CreateOptions{})
	j, err := f.m.Submit(ctx, parent, model.TextPart("hello parent"))
	if err != nil {
		t.Fatal(err)
	}
	j.Wait(ctx)
	child, created, err := f.m.CreateRequest(ctx, "fork-1", CreateOptions{Parent: parent, Fork: true, Hidden: true})
	if err != nil || !created {
		t.Fatalf("CreateRequest = %q %v %v", child, created, err)
	}
	f.m.Close()
	m2, err := NewManager(ManagerOptions{Store: NewStore(f.store.Dir()), Models: f.m.o.Models, Tools: f.host, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if again, created, _ := m2.CreateRequest(ctx, "fork-1", CreateOptions{Parent: parent, Fork: true}); again != child || created {
		t.Errorf("the create request after a restart = %q %v, want %q again", again, created, child)
	}
	acc, err := m2.SubmitRequest(ctx, child, "task-1", Submission{Text: "do the child's work"})
	if err != nil {
		t.Fatal(err)
	}
	if j := m2.job(child); j != nil {
		j.Wait(ctx)
	}
	body := string(f.srv.Requests()[1].Body)
	for _, want := range []string{"hello parent", "parent answer", "session id: " + child, "parent session: " + parent,
		"forked from session " + parent, "do the child's work"} {
		if !strings.Contains(body, want) {
			t.Errorf("the child's first request lacks %q", want)
		}
	}
	if again, err := m2.SubmitRequest(ctx, child, "task-1", Submission{Text: "do the child's work"}); err != nil || !again.Repeat || !again.At.Equal(acc.At) {
		t.Errorf("a repeated submit = %+v %v, want the first acceptance again", again, err)
	}
	if len(f.srv.Requests()) != 2 {
		t.Errorf("%d model requests, want 2: a repeat submits nothing", len(f.srv.Requests()))
	}
}

// TestBusForget (issue 20): a closed session's ring is let go once its updates are older
// than the grace period; a subscriber that had not read it gets a reset for that session,
// one that comes later nothing; a subscription that names the session keeps it; a read
// costs the sessions that changed, in order.
func TestBusForget(t *testing.T) {
	b := newBus()
	now := time.Now()
	later := now.Add(closedGrace + time.Second)
	before := b.subscribe(nil, "")
	for _, id := range []string{"a", "b", "a"} {
		b.publish(Update{Type: UpdateNotice, Session: id, Text: id, Time: now})
	}
	watching := b.subscribe([]string{"b"}, b.id(0))
	b.forget("a", later)
	b.forget("b", later) // watched: kept
	after := b.subscribe(nil, b.id(b.seq))
	b.publish(Update{Type: UpdateNotice, Session: "c", Text: "c"})
	got := before.take()
	if len(got) != 3 || got[0].Text != "b" || got[1].Type != UpdateReset || got[1].Session != "a" || got[2].Text != "c" {
		t.Errorf("a subscriber from before the forget read %+v, want b's update, a reset for a (at a's last update), c's", got)
	}
	if got := watching.take(); len(got) != 1 || got[0].Text != "b" {
		t.Errorf("the subscriber of b read %+v, want b's update", got)
	}
	if got := after.take(); len(got) != 1 || got[0].Text != "c" {
		t.Errorf("a later subscriber read %+v, want c's update only", got)
	}
	// Beyond maxTombstones, the oldest tombstones go and a subscriber from before them gets
	// a reset of everything.
	old := b.subscribe(nil, b.id(b.seq))
	for i := range maxTombstones + 10 {
		id := fmt.Sprintf("s%d", i)
		b.publish(Update{Type: UpdateNotice, Session: id, Time: now})
		b.forget(id, later)
	}
	if len(b.rings) > maxTombstones+5 {
		t.Errorf("%d rings kept, want at most about %d", len(b.rings), maxTombstones)
	}
	if got := old.take(); len(got) != 1 || got[0].Type != UpdateReset || got[0].Session != "" {
		t.Errorf("a subscriber from before the dropped tombstones read %d updates, want one reset of everything", len(got))
	}
}

// TestSetModels (issue 28): a catalog swapped in is used by the next job of a session that
// is open, with its system prompt's blocks kept (the prompt is not read again) and its
// tools not released; a job that ran before used the catalog it started with.
func TestSetModels(t *testing.T) {
	prompts := 0
	f := newManager(t, ManagerOptions{Prompt: func(dir string) ([]string, PreludeWatcher, error) {
		prompts++
		return []string{"# Guidance"}, nil, nil
	}}, fakemodel.Turn{Text: "one"}, fakemodel.Turn{Text: "two"})
	ctx := t.Context()
	id, err := f.m.Create(ctx, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(text string) { t.Helper(); f.run(t, id, text) }
	run("first")
	old := f.m.models().(testModels)
	cfgs := maps.Clone(old.cfgs)
	cfg := cfgs["fake"]
	cfg.Options.APIModel = "fake-2"
	cfgs["fake"] = cfg
	f.m.SetModels(testModels{def: "fake", cfgs: cfgs})
	run("second")
	reqs := f.srv.Requests()
	for i, want := range []string{`"model":"fake"`, `"model":"fake-2"`} {
		if body := string(reqs[i].Body); !strings.Contains(body, want) || !strings.Contains(body, "# Guidance") {
			t.Errorf("request %d = %s, want %s and the prompt's blocks", i, body, want)
		}
	}
	if prompts != 1 {
		t.Errorf("the prompt was read %d times, want once: the swap keeps the session's blocks", prompts)
	}
	f.host.mu.Lock()
	released := len(f.host.released)
	f.host.mu.Unlock()
	if released != 0 {
		t.Errorf("the swap released %d runtimes' tools, want none", released)
	}
}
