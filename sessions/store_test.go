package sessions

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/sessiongen"
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

// TestListUnreadable (issue 20): files this myco cannot load are listed with their problem
// rather than left out (a newer schema, as a document or a log; damage mid-file, found by
// the checksums or only by a full load), opening one is ErrUnsupportedSchema or
// ErrDamaged, and nothing rewrites them. A torn last write is no problem.
func TestListUnreadable(t *testing.T) {
	st := NewStore(t.TempDir())
	good := newDoc(t, st)
	add(t, good, user("hello"), user("again"))
	torn := newDoc(t, st)
	f, _ := os.OpenFile(st.Path(torn.id), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`0badc0de {"kind":"mess`)
	f.Close()
	newerLog, _ := encode(record{Kind: "session", Session: &metaRec{Version: 6, ID: "future-log", Created: time.Now()}})
	os.WriteFile(st.Path("future-log"), newerLog, 0o600)
	os.WriteFile(st.Path("future-doc"), []byte(`{"version":6,"id":"future-doc","threads":[]}`), 0o600)
	for _, id := range []string{"damaged", "orphan"} {
		if err := st.Create(t.Context(), &Session{ID: id, Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
		d, _ := openDocument(t.Context(), st, id)
		add(t, d, user("hello"), user("again"))
	}
	data, _ := os.ReadFile(st.Path("damaged"))
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines[2] = bytes.Replace(lines[2], []byte("hello"), []byte("jello"), 1) // the checksum no longer matches
	os.WriteFile(st.Path("damaged"), bytes.Join(lines, nil), 0o600)
	// Damage only a full load finds: a record of a thread that does not exist, with its
	// checksum right.
	orphan, _ := encode(record{Kind: "message", Message: &msgRec{Thread: "t9", Entry: user("x")}})
	f, _ = os.OpenFile(st.Path("orphan"), os.O_WRONLY|os.O_APPEND, 0)
	f.Write(orphan)
	f.Write(orphan) // not the last line, so not taken for a torn write
	f.Close()
	before := map[string][]byte{}
	for _, id := range []string{"future-log", "future-doc", "damaged", "orphan"} {
		before[id], _ = os.ReadFile(st.Path(id))
	}

	for _, tt := range []struct {
		id   string
		want error
		says string
	}{
		{"future-log", ErrUnsupportedSchema, "needs a newer myco (session schema version 6"},
		{"future-doc", ErrUnsupportedSchema, "needs a newer myco (session schema version 6"},
		{"damaged", ErrDamaged, "damaged: " + st.Path("damaged") + ":3: checksum mismatch"},
		{"orphan", ErrDamaged, "damaged: " + st.Path("orphan") + ":"},
	} {
		_, err := st.Load(t.Context(), tt.id)
		le, ok := errors.AsType[*LoadError](err)
		if !errors.Is(err, tt.want) || !ok || !strings.HasPrefix(le.Problem(), tt.says) {
			t.Errorf("Load(%s) = %v, want %v saying %q", tt.id, err, tt.want, tt.says)
		}
	}
	list, err := st.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	problems := map[string]string{}
	for _, s := range list {
		problems[s.ID] = s.Problem
	}
	if len(list) != 6 || problems[good.id] != "" || problems[torn.id] != "" {
		t.Errorf("List = %d sessions %v, want all 6, the good and the torn one without a problem", len(list), problems)
	}
	for _, id := range []string{"future-log", "future-doc", "damaged", "orphan"} {
		if problems[id] == "" {
			t.Errorf("%s is listed without its problem", id)
		}
		if after, _ := os.ReadFile(st.Path(id)); !bytes.Equal(before[id], after) {
			t.Errorf("%s was rewritten", id)
		}
	}
}

// TestStoreSpecialFiles (issue 28): a FIFO or a directory where a session file should be
// is a LoadError (ErrDamaged) naming the file and what it is, from a load and in the
// listing, without blocking; nothing is appended to it.
func TestStoreSpecialFiles(t *testing.T) {
	st := NewStore(t.TempDir())
	if err := syscall.Mkfifo(st.Path("pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(st.Path("folder"), 0o700); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pipe": "a FIFO (named pipe)", "folder": "a directory"}
	for id, what := range want {
		_, err := st.Load(t.Context(), id)
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), st.Path(id)) || !strings.Contains(err.Error(), what) {
			t.Errorf("Load(%q) = %v, want ErrDamaged naming %s and %q", id, err, st.Path(id), what)
		}
		if _, err := st.appendRecords(id, record{Kind: "session", Session: &metaRec{Version: Version, ID: id}}); err == nil || !strings.Contains(err.Error(), what) {
			t.Errorf("appendRecords(%q) = %v, want a refusal saying %q", id, err, what)
		}
	}
	list, err := st.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range list {
		got[s.ID] = s.Problem
	}
	for id, what := range want {
		if !strings.HasPrefix(got[id], "damaged: "+st.Path(id)) || !strings.Contains(got[id], what) {
			t.Errorf("the listing's problem of %s = %q, want damaged naming the file and %q", id, got[id], what)
		}
	}
}

// TestStoreFiles: Files lists the session files with their sizes and times, without
// reading them (a damaged one too), and nothing else of the directory.
func TestStoreFiles(t *testing.T) {
	st := NewStore(t.TempDir())
	d := newDoc(t, st)
	add(t, d, user("hello"))
	os.WriteFile(st.Path("damaged"), []byte("not a log\n"), 0o600)
	os.WriteFile(filepath.Join(st.Dir(), "notes.txt"), []byte("x"), 0o600)
	files, err := st.Files(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]File{}
	for _, f := range files {
		got[f.ID] = f
	}
	if len(files) != 2 || got[d.id].ID == "" || got["damaged"].Size != int64(len("not a log\n")) {
		t.Fatalf("Files() = %+v, want the session's and the damaged file", files)
	}
	info, _ := os.Stat(st.Path(d.id))
	if f := got[d.id]; f.Size != info.Size() || !f.ModTime.Equal(info.ModTime()) {
		t.Errorf("Files() has %s as %+v, want size %d and time %v", d.id, f, info.Size(), info.ModTime())
	}
}

// TestListMany: a listing that reads many files reads them side by side, and lists each
// once with its row, as one that reads them in turn does.
func TestListMany(t *testing.T) {
	dir := t.TempDir()
	ids, err := sessiongen.Write(dir, sessiongen.Options{Sessions: 4 * listParallel * max(2, goruntime.GOMAXPROCS(0)), Messages: 6, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	list, err := NewStore(dir).List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(ids) {
		t.Fatalf("List() = %d rows, want %d", len(list), len(ids))
	}
	for i, s := range list {
		if s.ID != ids[i] || s.Title == "" || s.Turns == 0 || s.Problem != "" {
			t.Fatalf("row %d = %s %q, %d turns, problem %q; want %s with its title and turns", i, s.ID, s.Title, s.Turns, s.Problem, ids[i])
		}
	}
}
