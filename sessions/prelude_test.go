package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
	"myco.dev/workspace"
)

// preludeNotes returns the texts of the hidden prelude notes in a request's messages.
func preludeNotes(t *testing.T, srv *fakemodel.Server, i int) []string {
	t.Helper()
	var notes []string
	for _, m := range requestMessages(t, srv, i) {
		content, _ := m["content"].([]any)
		for _, c := range content {
			if b, _ := c.(map[string]any); b != nil {
				if text, _ := b["text"].(string); strings.HasPrefix(text, workspace.NoteMarker) {
					notes = append(notes, text)
				}
			}
		}
	}
	return notes
}

// savedNotes returns the prelude parts saved in the session's latest thread, by entry.
func savedNotes(s *Session) map[int]string {
	out := map[int]string{}
	for i, e := range s.Latest().Entries {
		for _, p := range e.Message.Parts {
			if p.Kind == model.KindSystem && p.System == preludeSource {
				out[i] = p.Text
			}
		}
	}
	return out
}

// TestPreludeNoteBetweenToolRounds: an edit made while a tool runs reaches the next request
// as exactly one hidden note on the tool results, saved before that request; a step
// without changes adds none; after a compaction the next step asks for a reload.
func TestPreludeNoteBetweenToolRounds(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte("old fact"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "edit")}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c2", "nothing")}},
		fakemodel.Turn{Text: "done"},
	)
	f.watchPrelude(t, dir)
	f.tools.run = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		if strings.Contains(string(c.Input), "edit") {
			os.WriteFile(filepath.Join(dir, "b.md"), []byte("new fact"), 0o644)
			os.Remove(filepath.Join(dir, "a.md"))
		}
		return model.ToolResult{Text: "ok"}
	}
	if _, err := f.submit(t, "go"); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	for i, want := range []int{0, 1, 1} {
		if n := len(preludeNotes(t, f.srv, i)); n != want {
			t.Errorf("request %d carries %d prelude notes, want %d", i, n, want)
		}
	}
	note := preludeNotes(t, f.srv, 1)[0]
	if !strings.Contains(note, "Added: b.md.") || !strings.Contains(note, "Removed: a.md.") || strings.Contains(note, "Modified") {
		t.Errorf("note = %q, want b.md added and a.md removed", note)
	}
	saved := savedNotes(loadFresh(t, f.store, f.id))
	if len(saved) != 1 || saved[2] != note {
		t.Errorf("saved notes = %v, want the note once, on the first tool results (entry 2)", saved)
	}

	// After a compaction the notes are gone from the context: the next step asks for a
	// reload and names the changes since the prompt.
	f.srv.Script(fakemodel.Turn{Text: "## Goal\nsummary"}, fakemodel.Turn{Text: "ok"})
	if _, err := f.runner.Compact(t.Context()); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if _, err := f.submit(t, "next"); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	// (The retained recent context may still hold the earlier note; the reload note is the
	// last one.)
	notes := preludeNotes(t, f.srv, 4)
	if len(notes) == 0 || !strings.Contains(notes[len(notes)-1], "Reload the full live prelude") || !strings.Contains(notes[len(notes)-1], "Added: b.md.") {
		t.Errorf("after compaction, notes = %q, want a reload note last", notes)
	}
	if n := strings.Count(strings.Join(notes, "\n"), "Reload"); n != 1 {
		t.Errorf("after compaction, %d reload notes, want 1", n)
	}
}

// failingWatcher fails its scans.
type failingWatcher struct{ n int }

func (w *failingWatcher) Step(string, bool) (string, error) {
	w.n++
	return "", errors.New("permission denied")
}

// TestPreludeScanFailure: a failed scan adds no note and does not stop the turn.
func TestPreludeScanFailure(t *testing.T) {
	f := newFixture(t, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "x")}}, fakemodel.Turn{Text: "done"})
	fw := &failingWatcher{}
	f.prelude = fw
	f.bind(t, "owner-1", nil)
	if _, err := f.submit(t, "go"); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if fw.n != 2 {
		t.Errorf("watcher asked %d times, want 2 (before each model step)", fw.n)
	}
	if n := len(savedNotes(loadFresh(t, f.store, f.id))); n != 0 {
		t.Errorf("%d notes saved after failed scans, want 0", n)
	}
}

// TestPrefixStableAcrossSteps: with prelude notes and the context-use note in play, every
// request repeats the previous request's messages up to the block that carried its cache
// breakpoint, byte for byte, and the system prompt never changes, so the cached prefix is
// reused at each step.
func TestPrefixStableAcrossSteps(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "edit")}, Usage: fakemodel.Usage{Input: 1000}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c2", "x")}, Usage: fakemodel.Usage{Input: 1100}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c3", "edit")}, Usage: fakemodel.Usage{Input: 1200}},
		fakemodel.Turn{Text: "done", Usage: fakemodel.Usage{Input: 1300}},
	)
	f.cfg.Options.ContextWindow = 100_000
	f.watchPrelude(t, dir)
	n := 0
	f.tools.run = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		if strings.Contains(string(c.Input), "edit") {
			n++
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("e%d.md", n)), []byte("fact"), 0o644)
		}
		return model.ToolResult{Text: "ok"}
	}
	if _, err := f.submit(t, "go"); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	reqs := f.srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	type block = map[string]any
	decode := func(i int) (system string, msgs [][]block) {
		var body struct {
			System   []block `json:"system"`
			Messages []struct {
				Content []block `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(reqs[i].Body, &body); err != nil {
			t.Fatal(err)
		}
		sys, _ := json.Marshal(body.System)
		for _, m := range body.Messages {
			msgs = append(msgs, m.Content)
		}
		return string(sys), msgs
	}
	sys0, _ := decode(0)
	for i := 0; i+1 < len(reqs); i++ {
		sysA, a := decode(i)
		sysB, b := decode(i + 1)
		if sysA != sys0 || sysB != sys0 {
			t.Fatalf("the system prompt changed at request %d", i+1)
		}
		// Find request i's message-side breakpoint.
		mi, bi := -1, -1
		for m, content := range a {
			for k, blk := range content {
				if blk["cache_control"] != nil {
					mi, bi = m, k
				}
			}
		}
		if mi < 0 {
			t.Fatalf("request %d has no message breakpoint", i)
		}
		if text, _ := a[mi][bi]["text"].(string); strings.HasPrefix(text, "[myco: context use]") {
			t.Errorf("request %d puts its breakpoint on the context note, which the next request drops", i)
		}
		if len(b) <= mi || len(b[mi]) <= bi {
			t.Fatalf("request %d is shorter than request %d's cached prefix", i+1, i)
		}
		for m := 0; m <= mi; m++ {
			last := len(a[m]) - 1
			if m == mi {
				last = bi
			}
			for k := 0; k <= last; k++ {
				x, y := maps.Clone(a[m][k]), maps.Clone(b[m][k])
				delete(x, "cache_control")
				delete(y, "cache_control")
				jx, _ := json.Marshal(x)
				jy, _ := json.Marshal(y)
				if string(jx) != string(jy) {
					t.Errorf("request %d changes block %d of message %d inside request %d's cached prefix:\n%s\n%s", i+1, k, m, i, jx, jy)
				}
			}
		}
	}
	if notes := preludeNotes(t, f.srv, 3); len(notes) != 2 {
		t.Errorf("the last request carries %d prelude notes, want 2 (one per edit)", len(notes))
	}
}

// TestPreludeAfterCompactionBetweenToolRounds: a prelude change the agent was told of
// before auto-compaction moved its running turn to a successor thread is still in the
// context of the first request there, as the watcher decides (retained or reloaded), and
// saved on the successor.
func TestPreludeAfterCompactionBetweenToolRounds(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte("old fact"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "edit")}, Usage: fakemodel.Usage{Input: 100}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c2", "more")}, Usage: fakemodel.Usage{Input: 900}},
		fakemodel.Turn{Text: "## Goal\nsummary"},
		fakemodel.Turn{Text: "done", Usage: fakemodel.Usage{Input: 100}},
	)
	f.cfg.ContextWindow, f.cfg.AutoCompactAt = 1000, 0.8
	f.watchPrelude(t, dir)
	f.tools.run = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		if c.ID == "c1" {
			os.WriteFile(filepath.Join(dir, "b.md"), []byte("new fact"), 0o644)
		}
		return model.ToolResult{Text: "ok"}
	}
	if _, err := f.submit(t, "go"); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	s := loadFresh(t, f.store, f.id)
	if len(s.Threads) != 2 {
		t.Fatalf("%d threads, want a compaction between the tool rounds", len(s.Threads))
	}
	if n := len(preludeNotes(t, f.srv, 1)); n != 1 {
		t.Fatalf("the second request carries %d prelude notes, want 1", n)
	}
	notes := preludeNotes(t, f.srv, 3)
	if len(notes) == 0 || !strings.Contains(notes[len(notes)-1], "b.md") {
		t.Errorf("the first request on the successor carries notes %q, want the change to b.md", notes)
	}
	for _, n := range savedNotes(s) {
		if strings.Contains(n, "b.md") {
			return
		}
	}
	t.Error("the successor holds no prelude note naming b.md")
}

// watchPrelude rebinds the fixture's runner with a watcher of the prelude in dir, whose
// prompt snapshot is taken now.
func (f *fixture) watchPrelude(t *testing.T, dir string) {
	t.Helper()
	w := workspace.NewWatcher(dir)
	if _, err := w.Prompt(); err != nil {
		t.Fatal(err)
	}
	f.prelude = w
	f.bind(t, "owner-1", nil)
}
