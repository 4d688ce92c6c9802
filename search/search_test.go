package search

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/sessiongen"
	"myco.dev/sessions"
)

type noModels struct{}

func (noModels) Default() string { return "fake" }
func (noModels) Agent(string, []string) (sessions.AgentConfig, error) {
	return sessions.AgentConfig{}, errors.New("no models in this test")
}

func newManager(t testing.TB, dir string) *sessions.Manager {
	t.Helper()
	m, err := sessions.NewManager(sessions.ManagerOptions{Store: sessions.NewStore(dir), Models: noModels{}, Dir: t.TempDir(),
		Log: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func text(s string) model.Part { return model.TextPart(s) }

// writeSession writes a session of two threads (the first compacted into the second), an
// answer about the lexer in the first, a tool call's output and an edited path.
func writeSession(t *testing.T, m *sessions.Manager, id, cwd string, archived bool, at time.Time) {
	t.Helper()
	call := &model.ToolCall{ID: "c1", Name: "bash", Input: json.RawMessage(`{"command":"go test ./parser"}`)}
	edit := &model.ToolCall{ID: "c2", Name: "str_replace_based_edit_tool", Input: json.RawMessage(`{"command":"view","path":"/src/proj/internal/tokenizer.go"}`)}
	t1 := &sessions.Thread{ID: "t1", Created: at, Successor: "t2", Entries: []sessions.Entry{
		{Message: model.Message{Role: model.User, Parts: []model.Part{text("review the code")}}, AcceptedAt: &at},
		{Message: model.Message{Role: model.Assistant, Parts: []model.Part{text("The lexer drops the last token of a line."), {Kind: model.KindToolCall, ToolCall: call}}}},
		{Message: model.Message{Role: model.User, Parts: []model.Part{{Kind: model.KindToolResult, ToolResult: &model.ToolResult{CallID: "c1", Text: "--- FAIL: TestQuasar (0.00s)"}}}}},
		{Message: model.Message{Role: model.Assistant, Parts: []model.Part{{Kind: model.KindToolCall, ToolCall: edit}}}},
		{Message: model.Message{Role: model.User, Parts: []model.Part{{Kind: model.KindToolResult, ToolResult: &model.ToolResult{CallID: "c2", Text: "package tokenizer"}}}}},
		{Message: model.Message{Role: model.Assistant, Parts: []model.Part{text("Fixed.")}}},
	}}
	t2 := &sessions.Thread{ID: "t2", Created: at, Predecessor: "t1", Reason: "compaction", Base: 1, Entries: []sessions.Entry{
		{Message: model.Message{Role: model.User, Parts: []model.Part{text("# Compacted context\nsummary")}}},
		{Message: model.Message{Role: model.User, Parts: []model.Part{text("now the renderer")}}, AcceptedAt: &at},
		{Message: model.Message{Role: model.Assistant, Parts: []model.Part{text("The renderer escapes every ampersand twice.")}}},
	}}
	s := &sessions.Session{ID: id, Created: at, Title: "review " + id, Cwd: cwd, Archived: archived, Threads: []*sessions.Thread{t1, t2}}
	if err := m.Store().Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
}

// run runs ix's worker until the returned stop, or the test's end, stops it and closes ix.
func run(t *testing.T, ix *Index) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ix.Run(ctx); close(done) }()
	var once bool
	stop = func() {
		if !once {
			once = true
			cancel()
			<-done
			ix.Close()
		}
	}
	t.Cleanup(stop)
	return stop
}

func waitBuilt(t *testing.T, ix *Index) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for ix.Progress().Building {
		if time.Now().After(deadline) {
			t.Fatalf("the build did not end: %+v", ix.Progress())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func search(t *testing.T, ix *Index, q Query) Result {
	t.Helper()
	res, err := ix.Search(t.Context(), q)
	if err != nil {
		t.Fatalf("Search(%+v): %v", q, err)
	}
	return res
}

// TestSearch (issue 32): the index finds text in an answer, a tool's output, a path a
// session touched, an older thread and (on request) an archived session, with the
// snippet's matches marked and where the message is; phrases, the project filter and a
// date range narrow it; what a person types cannot break the query.
func TestSearch(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir)
	repo := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(filepath.Join(repo, ".git"), 0o755)
	os.MkdirAll(filepath.Join(repo, "sub"), 0o755)
	other := t.TempDir()
	old := time.Date(2026, 3, 1, 12, 0, 0, 0, time.Local)
	writeSession(t, m, "20260301-120000-aaaaaa", filepath.Join(repo, "sub"), false, old)
	writeSession(t, m, "20261201-120000-bbbbbb", other, false, time.Date(2026, 12, 1, 12, 0, 0, 0, time.Local))
	writeSession(t, m, "20261202-120000-cccccc", other, true, time.Date(2026, 12, 2, 12, 0, 0, 0, time.Local))

	ix, err := Open(t.Context(), Options{Path: filepath.Join(t.TempDir(), "search.db"), Source: m})
	if err != nil {
		t.Fatal(err)
	}
	run(t, ix)
	waitBuilt(t, ix)

	res := search(t, ix, Query{Text: "lexer"})
	if len(res.Hits) != 2 || res.Incomplete {
		t.Fatalf("lexer: %d hits (incomplete %v), want the two active sessions' answers", len(res.Hits), res.Incomplete)
	}
	h := res.Hits[0]
	if h.Session != "20261201-120000-bbbbbb" || h.Thread != "t1" || h.Index != 1 || h.Kind != "answer" {
		t.Errorf("the newest hit = %+v, want the answer, message 1 of the older thread t1", h)
	}
	if len(h.Marks) != 1 || string([]rune(h.Snippet)[h.Marks[0][0]:h.Marks[0][1]]) != "lexer" {
		t.Errorf("snippet %q marks %v, want lexer marked", h.Snippet, h.Marks)
	}
	for _, tt := range []struct {
		q    Query
		want int
		kind string
	}{
		{Query{Text: "TestQuasar"}, 2, "tool_output"},
		{Query{Text: "tokenizer.go"}, 4, ""}, // the path, the call's input (both calls), the output
		{Query{Text: "ampersand"}, 2, "answer"},
		{Query{Text: "ampersand", Archived: true}, 3, "answer"},
		{Query{Text: `"every ampersand twice"`}, 2, "answer"},
		{Query{Text: `"twice every ampersand"`}, 0, ""},
		{Query{Text: "lexer", Project: repo}, 1, "answer"},
		{Query{Text: "lexer", From: time.Date(2026, 11, 1, 0, 0, 0, 0, time.Local)}, 1, "answer"},
		{Query{Text: "lexer", To: time.Date(2026, 4, 1, 0, 0, 0, 0, time.Local)}, 1, "answer"},
		{Query{Text: "rend"}, 4, ""},                                 // a prefix: renderer in the question and the answer
		{Query{Text: `lexer OR NEAR( * : - ^ "unterminated`}, 0, ""}, // taken literally: no syntax error
		{Query{Text: "summary"}, 0, ""},                              // a compaction's summary is not a message of its own
	} {
		res := search(t, ix, tt.q)
		if len(res.Hits) != tt.want || tt.kind != "" && len(res.Hits) > 0 && res.Hits[0].Kind != tt.kind {
			var got []string
			for _, h := range res.Hits {
				got = append(got, h.Session+"/"+h.Thread+"/"+h.Kind+": "+h.Snippet)
			}
			t.Errorf("%+v: %d hits, want %d %s:\n%s", tt.q, len(res.Hits), tt.want, tt.kind, strings.Join(got, "\n"))
		}
	}
	// Paging.
	first := search(t, ix, Query{Text: "ampersand", Archived: true, Limit: 2})
	if len(first.Hits) != 2 || first.Next == 0 {
		t.Fatalf("page 1: %d hits, next %d", len(first.Hits), first.Next)
	}
	second := search(t, ix, Query{Text: "ampersand", Archived: true, Limit: 2, Before: first.Next})
	if len(second.Hits) != 1 || second.Next != 0 || second.Hits[0].Session == first.Hits[1].Session {
		t.Errorf("page 2: %+v", second)
	}

	// A change is indexed after a checkpoint's update, off the writer's path.
	ix.o.Debounce = time.Millisecond
	if err := m.SetArchived(t.Context(), "20261202-120000-cccccc", false); err != nil {
		t.Fatal(err)
	}
	ix.Changed("20261202-120000-cccccc")
	deadline := time.Now().Add(10 * time.Second)
	for len(search(t, ix, Query{Text: "ampersand"}).Hits) != 3 {
		if time.Now().After(deadline) {
			t.Fatal("a restored session is not found after its change")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRebuild (issue 32): an index deleted, truncated or of an older format is rebuilt
// from the session files, and while it is, search answers from what it has, saying it is
// incomplete; a session file it cannot read is reported, not dropped silently.
func TestRebuild(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir)
	if _, err := sessiongen.Write(dir, sessiongen.Options{Sessions: 300, Messages: 20, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	writeSession(t, m, "20200101-000000-abcdef", t.TempDir(), false, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	os.WriteFile(filepath.Join(dir, "20200101-000001-badbad.session"), []byte("00000000 {\"kind\":\"session\"}\n"), 0o600)
	path := filepath.Join(t.TempDir(), "search.db")
	build := func(what string) {
		t.Helper()
		ix, err := Open(t.Context(), Options{Path: path, Source: m})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !ix.Progress().Building {
			t.Errorf("%s: the index is not being rebuilt", what)
		}
		// Search answers during the build, saying it is incomplete.
		res := search(t, ix, Query{Text: "lexer"})
		if !res.Incomplete {
			t.Errorf("%s: a search during the build does not say it is incomplete", what)
		}
		stop := run(t, ix)
		defer stop()
		waitBuilt(t, ix)
		if res := search(t, ix, Query{Text: "ampersand"}); len(res.Hits) != 1 || res.Incomplete {
			t.Errorf("%s: after the rebuild: %d hits, incomplete %v", what, len(res.Hits), res.Incomplete)
		}
		if p := ix.Progress(); len(p.Unreadable) != 0 && !strings.Contains(strings.Join(p.Unreadable, " "), "badbad") {
			t.Errorf("%s: unreadable = %v", what, p.Unreadable)
		}
	}
	build("missing")

	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)/3], 0o600)
	build("truncated")

	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	ix, err := Open(t.Context(), Options{Path: path, Source: m})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.db.Exec(`update meta set value = '0' where key = 'format'`); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	build("older format")
}
