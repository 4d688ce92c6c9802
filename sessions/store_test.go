package sessions

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
)

// newDoc creates a session in st and returns its document.
func newDoc(t *testing.T, st *Store) *document {
	t.Helper()
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	id := NewID(now)
	if err := st.Create(t.Context(), &Session{ID: id, Created: now, Model: "m", Title: "Fix the build"}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	d, err := openDocument(t.Context(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// add durably appends entries to the latest thread of d.
func add(t *testing.T, d *document, entries ...Entry) error {
	t.Helper()
	_, err := d.checkpoint(t.Context(), d.latest(), entries, nil)
	return err
}

func user(text string) Entry {
	at := time.Date(2026, 12, 2, 10, 1, 0, 0, time.UTC)
	return Entry{Message: model.Message{Role: model.User, Parts: []model.Part{model.TextPart(text)}}, AcceptedAt: &at}
}

func TestStoreRoundTrip(t *testing.T) {
	st := NewStore(t.TempDir())
	d := newDoc(t, st)
	th := d.latest()
	if _, err := d.checkpoint(t.Context(), th, []Entry{user("hello"), {Message: model.Message{Role: model.Assistant, Parts: []model.Part{model.TextPart("hi")}}}}, nil); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	if _, err := d.checkpoint(t.Context(), th, nil, &model.Usage{Input: 42, Output: 3}); err != nil {
		t.Fatal(err)
	}
	if err := d.updateMeta(t.Context(), func(s *Session) { s.Title = "Renamed" }); err != nil {
		t.Fatal(err)
	}
	got, err := st.Load(t.Context(), d.id)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got.Title != "Renamed" || got.Model != "m" || len(got.Threads) != 1 {
		t.Fatalf("Load = %+v", got)
	}
	g := got.Latest()
	if len(g.Entries) != 2 || g.Entries[0].Message.Text() != "hello" || g.Entries[1].Message.Text() != "hi" {
		t.Fatalf("entries = %+v", g.Entries)
	}
	if g.Entries[0].AcceptedAt == nil || g.Entries[1].AcceptedAt != nil {
		t.Errorf("acceptance times not kept: %+v", g.Entries)
	}
	if g.Usage.Input != 42 {
		t.Errorf("usage = %+v, want input 42", g.Usage)
	}
	list, err := st.List(t.Context())
	if err != nil || len(list) != 1 || list[0].Title != "Renamed" {
		t.Fatalf("List = %+v, %v", list, err)
	}
}

func TestStoreTornTailIgnored(t *testing.T) {
	st := NewStore(t.TempDir())
	d := newDoc(t, st)
	if err := add(t, d, user("one")); err != nil {
		t.Fatal(err)
	}
	path := st.Path(d.id)
	data, _ := os.ReadFile(path)
	good := len(data)
	if err := add(t, d, user("two")); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(path)
	for cut := good + 1; cut < len(data); cut += 7 {
		if err := os.WriteFile(path, data[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := st.Load(t.Context(), d.id)
		if err != nil {
			t.Fatalf("Load after a write torn at byte %d: %v", cut, err)
		}
		if n := len(got.Latest().Entries); n != 1 {
			t.Fatalf("torn at %d: %d entries, want 1", cut, n)
		}
	}
}

func TestStoreDamageReported(t *testing.T) {
	st := NewStore(t.TempDir())
	d := newDoc(t, st)
	if err := add(t, d, user("one"), user("two")); err != nil {
		t.Fatal(err)
	}
	path := st.Path(d.id)
	data, _ := os.ReadFile(path)
	bad := bytes.Replace(data, []byte(`"one"`), []byte(`"onf"`), 1)
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := st.Load(t.Context(), d.id)
	var le *LoadError
	if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(err.Error(), "checksum") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load of a damaged file = %v, want a checksum LoadError at %s:3", err, path)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, bad) {
		t.Error("Load changed the damaged file")
	}
}

func TestStoreNewerVersionRefused(t *testing.T) {
	st := NewStore(t.TempDir())
	line, _ := encode(record{Kind: "session", Session: &metaRec{Version: 6, ID: "x1"}})
	if err := os.WriteFile(st.Path("x1"), line, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := st.Load(t.Context(), "x1")
	if err == nil || !strings.Contains(err.Error(), "version 6") || !strings.Contains(err.Error(), "version 5") {
		t.Fatalf("Load = %v, want an error naming both versions", err)
	}
}

func TestStoreNotFound(t *testing.T) {
	st := NewStore(t.TempDir())
	for _, id := range []string{"nope", "../etc/passwd", ""} {
		if _, err := st.Load(t.Context(), id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Load(%q) = %v, want ErrNotFound", id, err)
		}
	}
}

func TestStoreAppendFailureLeavesMemory(t *testing.T) {
	st := NewStore(t.TempDir())
	d := newDoc(t, st)
	os.Remove(st.Path(d.id))
	if err := add(t, d, user("x")); err == nil {
		t.Fatal("an append to a vanished file succeeded")
	}
	if len(d.snapshot().Latest().Entries) != 0 {
		t.Error("a failed append changed the in-memory thread")
	}
}
