package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPrune: what an owner keeps stays restorable, what no owner keeps goes, and the
// store shrinks; another owner's snapshots of the same files are untouched.
func TestPrune(t *testing.T) {
	dir := t.TempDir()
	store := t.TempDir()
	s := openStore(t, store)
	snap := func(owner string) ID {
		t.Helper()
		sn, err := s.Capture(t.Context(), CaptureRequest{Owner: owner, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return sn.ID
	}
	var ids []ID
	for i := range 5 {
		write(t, dir, map[string]string{"f": strings.Repeat(string(rune('a'+i)), 50_000), "same": "same"})
		ids = append(ids, snap("a"))
	}
	shared := snap("b") // b keeps the last state too
	if shared != ids[4] {
		t.Fatalf("the same state captured for b has another id")
	}
	size0, _ := s.Size()

	res, err := s.Prune(t.Context(), "a", ids[3:])
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if res.Dropped != 3 || res.Freed <= 0 {
		t.Errorf("Prune = %+v, want 3 dropped and space freed", res)
	}
	size1, _ := s.Size()
	if size1 >= size0 {
		t.Errorf("Size %d after the prune, %d before", size1, size0)
	}
	for _, id := range ids[:3] {
		if _, err := s.Diff(t.Context(), id, ids[4], DiffOptions{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("Diff of a pruned snapshot: %v, want ErrNotFound", err)
		}
	}
	// The kept ones restore, after a reopen too.
	s.Close()
	s = openStore(t, store)
	res2 := restore(t, s, RestoreRequest{From: ids[4], To: ids[3]})
	if len(res2.Conflicts) > 0 || !slices.Equal(res2.Restored, []Path{"f"}) {
		t.Errorf("Restore after the prune = %+v", res2)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != strings.Repeat("d", 50_000) {
		t.Errorf("f = %.10q…, want d…", b)
	}

	// a drops everything; b's snapshot stays whole.
	if _, err := s.Prune(t.Context(), "a", nil); err != nil {
		t.Fatal(err)
	}
	d, err := s.Diff(t.Context(), shared, shared, DiffOptions{})
	if err != nil || len(d.Changes) != 0 {
		t.Errorf("b's snapshot after a's prune: %v, %v", d, err)
	}
	write(t, dir, map[string]string{"f": "x"})
	res3 := restore(t, s, RestoreRequest{From: snap("c"), To: shared})
	if len(res3.Conflicts) > 0 {
		t.Errorf("restore of b's snapshot: %+v", res3)
	}
	// Everyone goes: the store is empty but for its lists, and the stat cache went with
	// the snapshot it described.
	for _, o := range []string{"b", "c"} {
		if _, err := s.Prune(t.Context(), o, nil); err != nil {
			t.Fatal(err)
		}
	}
	if size, _ := s.Size(); size != 0 {
		t.Errorf("Size with nothing kept = %d, want 0", size)
	}
	sn, _ := s.Capture(t.Context(), CaptureRequest{Owner: "d", Dir: dir})
	if sn.Read != 2 {
		t.Errorf("Capture after everything was pruned read %d files, want 2", sn.Read)
	}
}

// TestPruneBusy: a prune needs the store alone; the owner's list is rewritten anyway.
func TestPruneBusy(t *testing.T) {
	dir, store := t.TempDir(), t.TempDir()
	write(t, dir, map[string]string{"f": "x"})
	s := openStore(t, store)
	other := openStore(t, store) // another process, as far as flock goes
	id := capture(t, s, dir)
	if _, err := s.Prune(t.Context(), "test", nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("Prune with the store open elsewhere: %v, want ErrBusy", err)
	}
	// the other process still reads it, and can prune once alone
	if _, err := other.Diff(t.Context(), id, id, DiffOptions{}); err != nil {
		t.Errorf("Diff in the other process: %v", err)
	}
	s.Close()
	if _, err := other.Prune(t.Context(), "test", nil); err != nil {
		t.Errorf("Prune once alone: %v", err)
	}
	if _, err := other.Diff(t.Context(), id, id, DiffOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Diff after the prune: %v, want ErrNotFound", err)
	}
}

// TestStoreSharedBetweenProcesses: a snapshot one process captured is read by another
// that opened the store before it.
func TestStoreSharedBetweenProcesses(t *testing.T) {
	dir, store := t.TempDir(), t.TempDir()
	a, b := openStore(t, store), openStore(t, store)
	write(t, dir, map[string]string{"f": "1"})
	id0 := capture(t, a, dir)
	write(t, dir, map[string]string{"f": "2"})
	id1 := capture(t, a, dir)
	if got := kinds(diff(t, b, id0, id1)); !slices.Equal(got, []string{"modified f"}) {
		t.Errorf("Diff in the other process = %q", got)
	}
}

// TestRefsTornLine: a ref line torn by a crash does not swallow the next one.
func TestRefsTornLine(t *testing.T) {
	dir, store := t.TempDir(), t.TempDir()
	s := openStore(t, store)
	write(t, dir, map[string]string{"f": "1"})
	capture(t, s, dir)
	path := filepath.Join(store, "refs", ownerKey("test"))
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("0123abc") // torn
	f.Close()
	s.Close()
	s = openStore(t, store)
	write(t, dir, map[string]string{"f": "2"})
	id := capture(t, s, dir)
	_, ids, err := readRefFile(path)
	if err != nil || len(ids) != 2 || ids[1] != id {
		t.Errorf("refs = %q, %v; want the two ids", ids, err)
	}
}
