package sessions

import (
	"os"
	"strings"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
)

// TestReopenKeptDocument (issue 28): a session closed for being idle reopens from the
// document kept of it, without reading its file again, while the file is as it left it;
// once another writer changed the file, it is read again.
func TestReopenKeptDocument(t *testing.T) {
	turn := fakemodel.Turn{Text: "ok"}
	f := newManager(t, ManagerOptions{IdleClose: time.Hour, IdleKeep: 1}, turn, turn, turn, turn, turn)
	ctx := t.Context()
	run := func(id, text string) { t.Helper(); f.run(t, id, text) }
	a, _ := f.m.Create(ctx, CreateOptions{})
	run(a, "first")
	b, _ := f.m.Create(ctx, CreateOptions{})
	run(b, "second")
	f.m.closeIdle(ctx, time.Now()) // a, the least recently used beyond IdleKeep
	if _, ok := f.m.docs.get(a); !ok {
		t.Fatal("the session closed for being idle has no kept document")
	}

	// Garble a's file in place, the same file and size: a read of it would fail.
	path := f.store.Path(a)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	good := append([]byte(nil), data...)
	for i := range data {
		if data[i] != '\n' {
			data[i] = 'x'
		}
	}
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	sess, _, err := f.m.Snapshot(ctx, a)
	if err != nil || len(sess.Latest().Entries) != 2 {
		t.Fatalf("Snapshot(%s) of the closed session = %v entries, %v; want its 2 from the kept document", a, len(sess.Latest().Entries), err)
	}
	if _, err := f.m.open(ctx, a); err != nil {
		t.Fatalf("reopen of the closed session: %v, want it opened from the kept document", err)
	}
	if _, ok := f.m.docs.get(a); ok {
		t.Error("an open session's document is still kept")
	}
	if err := os.WriteFile(path, good, 0o600); err != nil { // what it was, for the turn below
		t.Fatal(err)
	}
	f.m.CloseSession(a)

	// b is closed and kept; another process appends to its file: b is read again.
	f.m.closeIdle(ctx, time.Now().Add(2*time.Hour))
	if _, ok := f.m.docs.get(b); !ok {
		t.Fatal("the session closed for being idle has no kept document")
	}
	other, err := NewManager(ManagerOptions{Store: NewStore(f.store.Dir()), Models: f.m.o.Models, IdleClose: -1, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.SetTitle(ctx, b, "renamed elsewhere"); err != nil {
		t.Fatal(err)
	}
	if sess, _, err := f.m.Snapshot(ctx, b); err != nil || sess.Title != "renamed elsewhere" {
		t.Errorf("Snapshot(%s) after another writer = %q, %v; want the title it wrote", b, sess.Title, err)
	}
	run(b, "third")
	if sess, _, _ := f.m.Snapshot(ctx, b); sess.Title != "renamed elsewhere" || len(sess.Latest().Entries) != 4 {
		t.Errorf("after a turn: %q with %d entries, want the other writer's title and 4 entries", sess.Title, len(sess.Latest().Entries))
	}
}

// TestDocCacheBounds: the kept documents stay within their count and their files' bytes,
// the least recently used going first; one larger than the whole cache is not kept.
func TestDocCacheBounds(t *testing.T) {
	c := newDocCache(3, 100)
	doc := func(size int64) loaded { return loaded{sess: &Session{}, file: fileState{size: size}} }
	for _, id := range []string{"a", "b", "c"} {
		c.put(id, doc(10))
	}
	c.get("a") // b is now the least recently used
	c.put("d", doc(10))
	for _, tt := range []struct {
		id   string
		kept bool
	}{{"b", false}, {"c", true}, {"a", true}, {"d", true}} {
		if _, ok := c.get(tt.id); ok != tt.kept {
			t.Errorf("after a fourth document: %s kept %v, want %v", tt.id, ok, tt.kept)
		}
	}
	c.put("e", doc(90)) // 120 bytes: c and a, the least recently used, go
	for _, tt := range []struct {
		id   string
		kept bool
	}{{"c", false}, {"a", false}, {"d", true}, {"e", true}} {
		if _, ok := c.get(tt.id); ok != tt.kept {
			t.Errorf("after a document of 90 bytes: %s kept %v, want %v", tt.id, ok, tt.kept)
		}
	}
	c.put("f", doc(101))
	if _, ok := c.get("f"); ok {
		t.Error("a document larger than the cache was kept")
	}
	c.drop("e")
	if _, ok := c.get("e"); ok || c.bytes != 10 || c.order.Len() != 1 {
		t.Errorf("after drop: e kept %v, %d bytes in %d documents; want d's 10 bytes alone", ok, c.bytes, c.order.Len())
	}
}

// TestReopenKeepsOwner (issue 28): a session closed for being idle, which held no tool
// handle, reopens with its runtime's owner, so its next turn does not tell the model of a
// new runtime (about 500 bytes in every turn of a session closed between its turns, when
// more sessions work than IdleKeep).
func TestReopenKeepsOwner(t *testing.T) {
	turn := fakemodel.Turn{Text: "ok"}
	f := newManager(t, ManagerOptions{IdleClose: time.Hour, IdleKeep: 1}, turn, turn, turn)
	ctx := t.Context()
	run := func(id, text string) { t.Helper(); f.run(t, id, text) }
	a, _ := f.m.Create(ctx, CreateOptions{})
	run(a, "first")
	owner := f.m.Owner(a)
	b, _ := f.m.Create(ctx, CreateOptions{})
	run(b, "second")
	f.m.closeIdle(ctx, time.Now())
	if got := f.m.Owner(a); got != "" {
		t.Fatalf("Owner(%s) = %q after closeIdle, want it closed", a, got)
	}
	run(a, "again")
	if got := f.m.Owner(a); got != owner {
		t.Errorf("Owner(%s) after the reopen = %q, want %q again", a, got, owner)
	}
	reqs := f.srv.Requests()
	if body := string(reqs[len(reqs)-1].Body); strings.Contains(body, "new runtime") || strings.Count(body, "[myco: runtime]") != 1 {
		t.Errorf("the turn after the reopen tells the model of a new runtime:\n%s", body)
	}
}

// TestDocCacheKeepsOwner: a view that read a session's file while the session was being
// closed puts its document, without an owner, after the one the close kept: the owner
// stays while both are of the same file, and goes once the file changed (the race behind
// a flaky TestReopenKeepsOwner in CI).
func TestDocCacheKeepsOwner(t *testing.T) {
	path := t.TempDir() + "/s.jsonl"
	if err := os.WriteFile(path, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	c := newDocCache(3, 100)
	c.put("a", loaded{sess: &Session{}, file: fileState{info: st, size: 10}, owner: "a/rt-1"})
	c.put("a", loaded{sess: &Session{}, file: fileState{info: st, size: 10}})
	if got, _ := c.get("a"); got.owner != "a/rt-1" {
		t.Errorf("after a view's read of the same file: owner %q, want a/rt-1", got.owner)
	}
	c.put("a", loaded{sess: &Session{}, file: fileState{info: st, size: 12}})
	if got, _ := c.get("a"); got.owner != "" {
		t.Errorf("after a read of the file grown by another writer: owner %q, want none", got.owner)
	}
}
