package sessions

import (
	"encoding/json"
	"strings"
	"testing"

	"myco.dev/hosts/tools"
	"myco.dev/internal/fakemodel"
)

var (
	_ tools.Tool = (*HistoryTool)(nil)
	_ tools.Tool = (*MetaTool)(nil)
)

func TestHistoryTool(t *testing.T) {
	f := newFixture(t, append(workTurns("a", 10), fakemodel.Turn{Text: summaryText})...)
	if _, err := f.submit(t, "please do a"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.runner.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	var reg Registry
	defer reg.add(f.rt)()
	h := NewHistoryTool(&reg)
	for _, tt := range []struct {
		name, input string
		want        []string
		isErr       bool
	}{
		{"threads newest first", `{"action":"threads"}`, []string{"2 threads", "- t2 (active, compaction)", "- t1 (read-only, first)"}, false},
		{"stats of the active thread", `{"action":"stats"}`, []string{"t2 (active", "predecessor: - t1"}, false},
		{"expand an original message", `{"action":"expand","thread_id":"t1","index":2}`, []string{"thread t1 message 2", "[tool result a, ok] did"}, false},
		{"index out of range", `{"action":"expand","thread_id":"t1","index":99}`, []string{"index must be between 0 and 3"}, true},
		{"unknown thread", `{"action":"stats","thread_id":"t9"}`, []string{`no thread "t9"`}, true},
		{"other session", `{"action":"threads","session_id":"nope"}`, []string{"not found"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := h.Call(t.Context(), "owner-1", json.RawMessage(tt.input))
			if res.IsError != tt.isErr {
				t.Fatalf("Call(%s) = %+v, want IsError %v", tt.input, res, tt.isErr)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("Call(%s) = %q, want %q in it", tt.input, res.Text, w)
				}
			}
		})
	}
	if res := h.Call(t.Context(), "stranger", json.RawMessage(`{"action":"threads"}`)); !res.IsError {
		t.Error("an unbound owner read a session")
	}
}

func TestMetaTool(t *testing.T) {
	f := newFixture(t)
	var reg Registry
	defer reg.add(f.rt)()
	hidden := &Session{ID: "child-1", Created: f.session().Created.Add(1), Hidden: true, Parent: f.id, Title: "child"}
	if err := f.store.Create(t.Context(), hidden); err != nil {
		t.Fatal(err)
	}
	m := NewMetaTool(&reg)
	call := func(in string) tools.Result { return m.Call(t.Context(), "owner-1", json.RawMessage(in)) }
	if res := call(`{"action":"set_title","title":"Fix the build"}`); res.IsError {
		t.Fatal(res.Text)
	}
	if res := call(`{"action":"edit_scratchpad","scratchpad":"step 1\nstep 2"}`); res.IsError {
		t.Fatal(res.Text)
	}
	if res := call(`{"action":"edit_scratchpad","old_str":"step 2","new_str":"step 2 done"}`); res.IsError {
		t.Fatal(res.Text)
	}
	if res := call(`{"action":"edit_scratchpad","old_str":"missing","new_str":"x"}`); !res.IsError {
		t.Error("an edit of a missing passage succeeded")
	}
	res := call(`{"action":"get"}`)
	for _, w := range []string{f.id, "Fix the build", `step 1\nstep 2 done`, `"cwd": `} {
		if !strings.Contains(res.Text, w) {
			t.Errorf("get = %s, want %q", res.Text, w)
		}
	}
	s := loadFresh(t, f.store, f.id)
	if s.Title != "Fix the build" || s.Scratchpad != "step 1\nstep 2 done" {
		t.Errorf("saved title %q, scratchpad %q", s.Title, s.Scratchpad)
	}
	if res := call(`{"action":"list"}`); strings.Contains(res.Text, "child-1") || !strings.Contains(res.Text, f.id) {
		t.Errorf("list = %s, want the hidden child left out", res.Text)
	}
	if res := call(`{"action":"list","include_hidden":true}`); !strings.Contains(res.Text, "child-1") || !strings.Contains(res.Text, "hidden") {
		t.Errorf("list include_hidden = %s", res.Text)
	}
}
