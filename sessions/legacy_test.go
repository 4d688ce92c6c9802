package sessions

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/agent/model"
)

// copyFixture puts testdata/name into a fresh store as id.session.
func copyFixture(t *testing.T, name, id string) *Store {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	st := NewStore(t.TempDir())
	if err := os.WriteFile(st.Path(id), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestLoadLegacy(t *testing.T) {
	for _, tt := range []struct {
		file, id      string
		version       int
		threads, msgs int // threads, and messages of the latest thread after recovery
		check         func(t *testing.T, s *Session)
	}{
		{"v2.session", "legacy-v2", 2, 1, 2, func(t *testing.T, s *Session) {
			if s.Latest().Entries[1].Message.Text() != "Hello!" || s.Title != "Greet" {
				t.Errorf("v2 content = %+v", s.Latest().Entries)
			}
		}},
		{"v3.session", "legacy-v3", 3, 1, 4, func(t *testing.T, s *Session) {
			th := s.Latest()
			if p := th.Entries[0].Message.Parts[0]; p.Kind != model.KindSystem || p.System != "runtime" {
				t.Errorf("v3 [myco:] note = %+v, want a system part", p)
			}
			if th.Entries[0].Message.Text() != "list the files" || th.Usage.Input != 1200 || s.Scratchpad != "remember: ls" || len(s.Links) != 1 {
				t.Errorf("v3 = %+v", s)
			}
		}},
		{"v4.session", "legacy-v4", 4, 2, 3, func(t *testing.T, s *Session) {
			t1, t2 := s.Threads[0], s.Threads[1]
			if t1.Successor != "t2" || t2.Predecessor != "t1" || !s.Hidden || s.Parent != "legacy-v3" || s.Archived {
				t.Errorf("v4 links: %+v %+v", t1, t2)
			}
			if r := t2.Entries[2].Message.Parts[0].ToolResult; r == nil || !r.Unknown {
				t.Errorf("v4 trailing call = %+v, want an unknown outcome (old files have no intents)", r)
			}
		}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			st := copyFixture(t, tt.file, tt.id)
			before, _ := os.ReadFile(st.Path(tt.id))
			s := loadFresh(t, st, tt.id)
			if s.Upgraded != tt.version || len(s.Threads) != tt.threads || len(s.Latest().Entries) != tt.msgs {
				t.Fatalf("Load = version %d, %d threads, %d messages; want %d, %d, %d", s.Upgraded, len(s.Threads), len(s.Latest().Entries), tt.version, tt.threads, tt.msgs)
			}
			for _, th := range s.Threads {
				for _, e := range th.Entries {
					if e.AcceptedAt != nil {
						t.Error("an old turn got an acceptance time")
					}
				}
			}
			tt.check(t, s)
			if after, _ := os.ReadFile(st.Path(tt.id)); !bytes.Equal(before, after) {
				t.Fatal("Load rewrote an old file")
			}
			if list, err := st.List(t.Context()); err != nil || len(list) != 1 || list[0].ID != tt.id {
				t.Errorf("List = %+v, %v", list, err)
			}
			// The first write turns it into a version 5 log and keeps the old file.
			d, err := openDocument(t.Context(), st, tt.id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.checkpoint(t.Context(), d.latest(), []Entry{user("next")}, nil); err != nil {
				t.Fatalf("Append to an upgraded session: %v", err)
			}
			if kept, _ := os.ReadFile(st.Path(tt.id) + ".v" + string(rune('0'+tt.version))); !bytes.Equal(kept, before) {
				t.Error("the old file was not kept")
			}
			s2 := loadFresh(t, st, tt.id)
			if s2.Upgraded != 0 || len(s2.Threads) != tt.threads || len(s2.Latest().Entries) != tt.msgs+1 {
				t.Errorf("after upgrade: version %d, %d threads, %d messages", s2.Upgraded, len(s2.Threads), len(s2.Latest().Entries))
			}
			tt.check(t, s2)
		})
	}
}

func TestLoadRefused(t *testing.T) {
	for _, tt := range []struct{ file, id, want string }{
		{"v6.session", "future", "version 6 is newer than this myco understands (version 5)"},
	} {
		st := copyFixture(t, tt.file, tt.id)
		before, _ := os.ReadFile(st.Path(tt.id))
		_, err := st.Load(t.Context(), tt.id)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), st.Path(tt.id)) {
			t.Errorf("Load(%s) = %v, want an error naming the file and %q", tt.file, err, tt.want)
		}
		if after, _ := os.ReadFile(st.Path(tt.id)); !bytes.Equal(before, after) {
			t.Errorf("Load(%s) changed the file", tt.file)
		}
	}
}

func TestMalformedPairsNotExecutable(t *testing.T) {
	st := copyFixture(t, "v4-bad-pairs.session", "legacy-bad")
	s := loadFresh(t, st, "legacy-bad")
	th := s.Latest()
	if err := th.Executable(); err == nil {
		t.Fatal("Executable() = nil for a thread with an orphan result")
	}
	if len(th.Entries) != 4 || th.Entries[2].Message.Parts[0].ToolResult.CallID != "zzz" {
		t.Error("the stored messages were changed; they must stay readable as they are")
	}
	h := th.History()
	if r := h[2].Parts[0].ToolResult; r == nil || r.CallID != "a" || !r.Unknown {
		t.Errorf("History()[2] = %+v, want the call answered with an unknown outcome", h[2].Parts)
	}
	for _, p := range h[2].Parts {
		if p.ToolResult != nil && p.ToolResult.CallID == "zzz" {
			t.Error("History kept the orphan result")
		}
	}
}
