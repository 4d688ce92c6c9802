package snapshot

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestCaptureStatCache: an unchanged tree is captured without reading a file or writing
// to the store; a change that keeps the size and the mtime is still seen (the ctime).
func TestCaptureStatCache(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a": "aaaa", "b/c": "cccc", "b/d": "dddd"})
	store := t.TempDir()
	s := openStore(t, store)
	s.racy = 0
	snap0, err := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if snap0.Read != 3 || snap0.Added == 0 || snap0.Files != 3 || snap0.Bytes != 12 {
		t.Errorf("first Capture = %+v, want 3 files read and stored", snap0)
	}
	packs, _ := os.ReadDir(filepath.Join(store, "packs"))
	snap1, _ := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir})
	if snap1.ID != snap0.ID || snap1.Read != 0 || snap1.Added != 0 {
		t.Errorf("unchanged Capture = %+v, want the same id, nothing read or added", snap1)
	}
	if again, _ := os.ReadDir(filepath.Join(store, "packs")); len(again) != len(packs) {
		t.Errorf("unchanged Capture wrote a pack")
	}

	// Same size, same mtime, other content.
	info, _ := os.Stat(filepath.Join(dir, "b/c"))
	write(t, dir, map[string]string{"b/c": "CCCC"})
	os.Chtimes(filepath.Join(dir, "b/c"), info.ModTime(), info.ModTime())
	snap2, _ := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir})
	if snap2.ID == snap0.ID || snap2.Read != 1 {
		t.Errorf("Capture after a same-size same-mtime change = %+v, want a new id, 1 file read", snap2)
	}

	// Reopened (a restart): the cache comes from disk.
	s.Close()
	s = openStore(t, store)
	s.racy = 0
	snap3, _ := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir})
	if snap3.ID != snap2.ID || snap3.Read != 0 {
		t.Errorf("Capture after reopening = %+v, want %s, nothing read", snap3, snap2.ID)
	}
	if got := kinds(diff(t, s, snap0.ID, snap3.ID)); !slices.Equal(got, []string{"modified b/c"}) {
		t.Errorf("Diff after reopening = %q", got)
	}
}

// TestCaptureRacy: a file captured within the racy window of its change is read again
// next time, since a change within the same clock tick would not change its stat.
func TestCaptureRacy(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a": "aaaa", "old": "x"})
	s := newStore(t)
	s.racy = time.Hour
	capture(t, s, dir)
	snap, _ := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir})
	if snap.Read != 2 {
		t.Errorf("Capture within the racy window read %d files, want 2", snap.Read)
	}
	s.racy = 0
	s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir})
	snap, _ = s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir})
	if snap.Read != 0 {
		t.Errorf("Capture past the racy window read %d files, want 0", snap.Read)
	}
}

// TestCaptureSpecialFiles: a FIFO is left out (and never opened: the capture would block),
// an unreadable file is recorded without its content, an unreadable directory as unknown.
func TestCaptureSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a": "a", "locked/x": "x", "secret": "s"})
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	if os.Geteuid() != 0 {
		os.Chmod(filepath.Join(dir, "locked"), 0)
		os.Chmod(filepath.Join(dir, "secret"), 0)
		t.Cleanup(func() { os.Chmod(filepath.Join(dir, "locked"), 0o755) })
	}
	snap, err := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	got := listing(t, s, snap.ID)
	if want := []string{"a", "locked/", "locked/x", "secret"}; os.Geteuid() == 0 && !slices.Equal(got, want) {
		t.Errorf("listing as root = %q, want %q", got, want)
	}
	if os.Geteuid() == 0 {
		return
	}
	if want := []string{"a", "locked/", "secret"}; !slices.Equal(got, want) {
		t.Errorf("listing = %q, want %q", got, want)
	}
	if snap.NotStored != 1 {
		t.Errorf("NotStored = %d, want 1 (secret)", snap.NotStored)
	}
	// what appears in the directory once readable is untracked on the unreadable side
	os.Chmod(filepath.Join(dir, "locked"), 0o755)
	snap2, _ := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir})
	if got, want := kinds(diff(t, s, snap.ID, snap2.ID)), []string{"added locked/x (untracked)"}; !slices.Equal(got, want) {
		t.Errorf("Diff = %q, want %q", got, want)
	}
}

func TestCaptureConcurrent(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 50 {
		files[filepath.Join("d", string(rune('a'+i%5)), string(rune('a'+i)))] = string(rune('a' + i))
	}
	write(t, dir, files)
	s := newStore(t)
	var wg sync.WaitGroup
	ids := make([]ID, 8)
	for i := range ids {
		wg.Go(func() {
			snap, err := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir})
			if err != nil {
				t.Error(err)
			}
			ids[i] = snap.ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent captures of one tree: %q", ids)
		}
	}
}

// TestCaptureMaxFiles: a capture of a tree over MaxFiles stops with ErrTooLarge and adds
// nothing to the store; an ignored directory is not walked, so it does not count.
func TestCaptureMaxFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{".gitignore": "big/\n"}
	for i := range 30 {
		files[filepath.Join("big", string(rune('a'+i%26))+string(rune('a'+i/26)))] = "x"
	}
	for i := range 5 {
		files[filepath.Join("src", string(rune('a'+i)))] = "y"
	}
	write(t, dir, files)
	s := newStore(t)
	if _, err := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir, MaxFiles: 10}); err != nil {
		t.Fatalf("Capture with big/ ignored: %v", err)
	}
	before, err := s.Size()
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir, MaxFiles: 10, NoGitignore: true})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Capture of 36 files with MaxFiles 10: %v, want ErrTooLarge", err)
	}
	if after, _ := s.Size(); after != before {
		t.Errorf("the store grew from %d to %d bytes for a capture that stopped", before, after)
	}
}

func TestCaptureErrors(t *testing.T) {
	s := newStore(t)
	for _, r := range []CaptureRequest{
		{Owner: "o", Dir: "relative"},
		{Owner: "o", Dir: filepath.Join(t.TempDir(), "missing")},
		{Owner: "o", Dir: t.TempDir(), Files: []string{"relative"}},
		{Dir: t.TempDir()},
	} {
		if _, err := s.Capture(t.Context(), r); err == nil {
			t.Errorf("Capture(%+v) succeeded", r)
		}
	}
	if _, err := s.Diff(t.Context(), ID(slices.Repeat([]byte("0"), 64)), ID(slices.Repeat([]byte("0"), 64)), DiffOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Diff of an unknown id: %v, want ErrNotFound", err)
	}
}

// TestHostileNames: names with newlines, control characters and bytes that are not UTF-8
// survive a capture, a diff, JSON and a restore.
func TestHostileNames(t *testing.T) {
	names := []string{"new\nline", "tab\there", "esc\x1b[31m", "bad\xff\xfe", "\x01", " lead", "trail ", "é", "back\\slash", "-dash", "*star?"}
	dir := t.TempDir()
	files := map[string]string{}
	for i, n := range names {
		files[n] = n
		files["sub\n"+string(rune('a'+i))+"/"+n] = n
	}
	write(t, dir, files)
	s := newStore(t)
	id0 := capture(t, s, dir)
	before := tree(t, dir)
	for p := range files {
		os.Remove(filepath.Join(dir, p))
	}
	id1 := capture(t, s, dir)
	d := diff(t, s, id0, id1)
	if len(d.Changes) != len(files) {
		t.Errorf("Diff: %d changes, want %d", len(d.Changes), len(files))
	}
	// Through JSON and back, as the host protocol carries them.
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back Diff
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var paths []Path
	for i, c := range back.Changes {
		if c.Path != d.Changes[i].Path {
			t.Errorf("path through JSON = %q, want %q", c.Path, d.Changes[i].Path)
		}
		paths = append(paths, c.Path)
	}
	res := restore(t, s, RestoreRequest{From: id1, To: id0, Paths: paths})
	if len(res.Conflicts) > 0 {
		t.Errorf("Conflicts = %+v", res.Conflicts)
	}
	if got := tree(t, dir); len(got) != len(before) {
		t.Errorf("after restore: %d paths, want %d", len(got), len(before))
	}
	for p, want := range before {
		if got := tree(t, dir)[p]; got != want {
			t.Errorf("%q = %q, want %q", p, got, want)
		}
	}
}

func FuzzPathText(f *testing.F) {
	for _, s := range []string{"", "a/b", "bad\xff", "\x00", "\x00AAAA", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(Path(s))
		if err != nil {
			t.Fatal(err)
		}
		var p Path
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("Unmarshal(%s): %v", b, err)
		}
		if p != Path(s) {
			t.Errorf("Path %q through JSON = %q", s, p)
		}
	})
}

// FuzzNames: any name a file may have survives a capture and a restore.
func FuzzNames(f *testing.F) {
	for _, n := range []string{"a", "new\nline", "\xff\xfe", "\x1b[0m", " ", "..a", ".gitx", "-"} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" || name == "." || name == ".." || len(name) > 200 || strings.ContainsAny(name, "/\x00") || isGitName(name) || name == ".gitignore" {
			return
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o600); err != nil {
			return // a name this file system refuses: nothing to capture
		}
		s := newStore(t)
		id0 := capture(t, s, dir)
		os.Remove(filepath.Join(dir, name))
		id1 := capture(t, s, dir)
		d := diff(t, s, id0, id1)
		if len(d.Changes) != 1 || d.Changes[0].Path != Path(name) || d.Changes[0].Kind != Deleted {
			t.Fatalf("Diff = %+v, want %q deleted", d.Changes, name)
		}
		res := restore(t, s, RestoreRequest{From: id1, To: id0, Paths: []Path{Path(name)}})
		if len(res.Restored) != 1 || len(res.Conflicts) > 0 {
			t.Fatalf("Restore = %+v", res)
		}
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != name {
			t.Fatalf("%q after restore = %q, %v", name, b, err)
		}
	})
}

// A store inside the directory it captures (a session in a remote host's home) leaves
// itself out: the next capture, after the first one's pack, is the same snapshot.
func TestCaptureLeavesItsStoreOut(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a": "aaaa"})
	os.MkdirAll(filepath.Join(dir, ".local", "state"), 0o700)
	s := openStore(t, filepath.Join(dir, ".local", "state", "myco snapshots*"))
	first := capture(t, s, dir)
	second := capture(t, s, dir)
	if first != second {
		t.Errorf("the second capture = %s, want %s: the store's own files were captured: %v", second, first, listing(t, s, second))
	}
	if got := listing(t, s, first); slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, "snapshots") }) {
		t.Errorf("the capture lists the store: %v", got)
	}
	if p := ExcludeDir("/h", "/h/a b*/[c]"); p != `/a\ b\*/\[c]/` {
		t.Errorf("ExcludeDir = %q", p)
	}
}

// A capture bounded in time gives up past its bound, storing nothing of its own.
func TestCaptureMaxTime(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a/b": "b", "c/d": "d"})
	s := newStore(t)
	_, err := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir, MaxTime: time.Nanosecond})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "still walking") {
		t.Errorf("Capture with MaxTime 1ns = %v, want ErrTooLarge, still walking", err)
	}
	if _, err := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir, MaxTime: time.Minute}); err != nil {
		t.Errorf("Capture with MaxTime 1m = %v", err)
	}
}
