package sessions

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/agent/model/anthropic"
	"myco.dev/internal/fakemodel"
)

// startModel runs a fake model with turns and returns a client for it.
func startModel(t testing.TB, turns ...fakemodel.Turn) (*fakemodel.Server, *model.Client) {
	t.Helper()
	srv, err := fakemodel.Start(turns...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := &model.Client{
		Protocol: anthropic.Protocol{},
		BaseURL:  srv.URL,
		Key:      func() (string, error) { return "sk-test", nil },
		Retry:    model.RetryPolicy{MaxAttempts: 1},
	}
	return srv, c
}

// fakeTools is a tool executor with one tool, "work", whose calls are counted.
type fakeTools struct {
	mu    sync.Mutex // guards calls
	calls []model.ToolCall
	run   func(ctx context.Context, call model.ToolCall) model.ToolResult
}

func (f *fakeTools) Specs() []model.ToolSpec {
	return []model.ToolSpec{{Name: "work", Description: "Do some work.", Schema: json.RawMessage(`{"type":"object","properties":{"what":{"type":"string"}}}`)}}
}

func (f *fakeTools) Call(ctx context.Context, call model.ToolCall) model.ToolResult {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
	if f.run != nil {
		return f.run(ctx, call)
	}
	return model.ToolResult{CallID: call.ID, Text: "did " + string(call.Input)}
}

func (f *fakeTools) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

type fixture struct {
	store  *Store
	id     string // the session's
	rt     *runtime
	runner *runner
	tools  *fakeTools
	srv    *fakemodel.Server
	client *model.Client
	cfg    AgentConfig
	events []event
	mu     sync.Mutex // guards events
	// sink, when set, also gets the events of the runtime the next bind makes.
	sink func(event)
	// prelude is the watcher the next bind gives the runner; nil means none.
	prelude PreludeWatcher
}

func testLog(t *testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(t.Output(), nil)) }

// newFixture builds a store, a new session, a runtime owned by "owner-1" and a runner over
// a fake model serving turns.
func newFixture(t *testing.T, turns ...fakemodel.Turn) *fixture {
	t.Helper()
	f := &fixture{store: NewStore(t.TempDir()), tools: &fakeTools{}}
	f.srv, f.client = startModel(t, turns...)
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	f.id = NewID(now)
	if err := f.store.Create(t.Context(), &Session{ID: f.id, Created: now, Model: "fake"}); err != nil {
		t.Fatal(err)
	}
	f.cfg = AgentConfig{
		Options:  agent.Options{Model: f.client, APIModel: "fake-1", System: "You are a test agent.", MaxOutputTokens: 1000, MaxTruncatedResumes: 2},
		ModelKey: "fake", Protocol: "anthropic-messages",
	}
	f.bind(t, "owner-1", nil)
	return f
}

// bind loads the fixture's session from disk, as a new process would, and makes a new
// runtime and runner for it.
func (f *fixture) bind(t *testing.T, owner string, inventory func(context.Context) (Inventory, error)) {
	t.Helper()
	sink := f.sink
	rt, err := newRuntime(runtimeOptions{Doc: f.open(t), Tools: f.tools, Owner: owner, Inventory: inventory, Sink: func(ev event) {
		f.mu.Lock()
		f.events = append(f.events, ev)
		f.mu.Unlock()
		if sink != nil {
			sink(ev)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRunner(runnerOptions{Runtime: rt, Agent: func() AgentConfig { return f.cfg }, Prelude: f.prelude, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	f.rt, f.runner = rt, r
}

// reload binds a new runtime over a new copy of the session, loaded from disk.
func (f *fixture) reload(t *testing.T, owner string) {
	t.Helper()
	f.bind(t, owner, nil)
}

// open loads the fixture's session from disk into a new document.
func (f *fixture) open(t *testing.T) *document {
	t.Helper()
	d, err := openDocument(t.Context(), f.store, f.id)
	if err != nil {
		t.Fatalf("open %s: %v", f.id, err)
	}
	return d
}

// session returns a copy of the session as the fixture's runtime holds it.
func (f *fixture) session() *Session { return f.rt.doc.snapshot() }

func (f *fixture) submit(t *testing.T, text string) (agent.Result, error) {
	t.Helper()
	return f.runner.Submit(t.Context(), model.TextPart(text))
}

func call(id, what string) fakemodel.ToolCall {
	return fakemodel.ToolCall{ID: id, Name: "work", Args: `{"what":"` + what + `"}`}
}

// requestMessages decodes the messages of the i-th request the fake received.
func requestMessages(t *testing.T, srv *fakemodel.Server, i int) []map[string]any {
	t.Helper()
	reqs := srv.Requests()
	if i >= len(reqs) {
		t.Fatalf("request %d of %d", i, len(reqs))
	}
	var body struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(reqs[i].Body, &body); err != nil {
		t.Fatal(err)
	}
	return body.Messages
}

// loadFresh loads the session from disk.
func loadFresh(t *testing.T, st *Store, id string) *Session {
	t.Helper()
	s, err := st.Load(t.Context(), id)
	if err != nil {
		t.Fatalf("Load(%q) = %v", id, err)
	}
	return s
}
