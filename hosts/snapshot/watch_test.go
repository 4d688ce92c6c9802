//go:build linux

package snapshot

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"myco.dev/internal/needs"
)

// watchCapture captures dir with the watch trusted.
func watchCapture(t testing.TB, s *Store, dir string) CaptureResult {
	t.Helper()
	snap, err := s.Capture(t.Context(), CaptureRequest{Owner: "test", Dir: dir, Watch: true})
	if err != nil {
		t.Fatalf("Capture(%s, Watch): %v", dir, err)
	}
	return snap
}

// sameAsWalk checks that a capture trusting the watch of s records what a full walk by
// another store does, and returns it.
func sameAsWalk(t *testing.T, s *Store, dir, step string) CaptureResult {
	t.Helper()
	got := watchCapture(t, s, dir)
	ref := newStore(t)
	want := capture(t, ref, dir)
	if got.ID != want {
		t.Fatalf("after %s: the watched capture recorded\n%q\nthe walk\n%q", step, listing(t, s, got.ID), listing(t, ref, want))
	}
	return got
}

// watches returns how many kernel watches s holds.
func watches(s *Store) int {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return len(s.watch.wds)
}

const watchTreeDirs = 6 // "", a, a/b, a/b/c, d, d/e: node_modules is ignored

func watchTree(t *testing.T) string {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		".gitignore": "node_modules/\n*.log\n",
		"top":        "top", "a/one": "1", "a/b/two": "2", "a/b/c/three": "3",
		"d/four": "4", "d/e/five": "5", "node_modules/x/y.js": "y",
	})
	return dir
}

// TestWatchUnchanged: once watched, an unchanged tree is captured without listing a
// directory, and a change lists only its directory and those above it.
func TestWatchUnchanged(t *testing.T) {
	dir := watchTree(t)
	s := newStore(t)
	s.racy = 0
	first := watchCapture(t, s, dir) // nothing to trust yet: lists all, watches all
	if first.Listed != watchTreeDirs {
		t.Fatalf("first capture listed %d directories, want %d", first.Listed, watchTreeDirs)
	}
	again := watchCapture(t, s, dir)
	if again.ID != first.ID || again.Listed != 0 || again.Read != 0 {
		t.Errorf("unchanged capture = %+v, want the same id, nothing listed or read", again)
	}
	full, err := s.Capture(t.Context(), CaptureRequest{Owner: "test", Dir: dir})
	if err != nil || full.ID != first.ID || full.Listed != watchTreeDirs {
		t.Errorf("capture without Watch = %+v, %v; want every directory listed, the same id", full, err)
	}

	write(t, dir, map[string]string{"a/b/c/three": "three"})
	if got := sameAsWalk(t, s, dir, "a change in a/b/c"); got.Listed != 4 || got.Read != 1 {
		t.Errorf("capture after a change in a/b/c = %+v, want 4 directories listed (a/b/c and above), 1 read", got)
	}
	if got := watchCapture(t, s, dir); got.Listed != 0 {
		t.Errorf("capture after that listed %d directories, want 0", got.Listed)
	}
	// In an ignored directory (not watched) and an ignored file (its directory listed).
	write(t, dir, map[string]string{"node_modules/x/z.js": "z"})
	if got := sameAsWalk(t, s, dir, "a write in node_modules"); got.Listed != 0 {
		t.Errorf("capture after a write in node_modules/ listed %d directories, want 0", got.Listed)
	}
	write(t, dir, map[string]string{"d/e/debug.log": "log"})
	if got := sameAsWalk(t, s, dir, "a write of an ignored file"); got.Listed != 3 {
		t.Errorf("capture after writing d/e/debug.log listed %d directories, want 3", got.Listed)
	}
}

// TestWatchSeesEveryChange: after each kind of change a capture trusting the watch records
// what a walk does.
func TestWatchSeesEveryChange(t *testing.T) {
	dir := watchTree(t)
	outside := t.TempDir()
	s := newStore(t)
	watchCapture(t, s, dir)
	p := func(rel string) string { return filepath.Join(dir, rel) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name string
		do   func()
	}{
		{"same size, same mtime", func() {
			info, _ := os.Stat(p("a/b/two"))
			write(t, dir, map[string]string{"a/b/two": "X"})
			must(os.Chtimes(p("a/b/two"), info.ModTime(), info.ModTime()))
		}},
		{"a new file in a new directory", func() { write(t, dir, map[string]string{"n/m/new": "new"}) }},
		{"a file in the new directory", func() { write(t, dir, map[string]string{"n/m/more": "more"}) }},
		{"rm", func() { must(os.Remove(p("d/four"))) }},
		{"chmod +x", func() { must(os.Chmod(p("a/one"), 0o755)) }},
		{"a file made a symlink", func() { must(os.Remove(p("top"))); must(os.Symlink("a/one", p("top"))) }},
		{"a directory renamed", func() { must(os.Rename(p("a"), p("A"))) }},
		{"a write in the renamed directory", func() { write(t, dir, map[string]string{"A/b/c/three": "33"}) }},
		{"two directories swapped", func() {
			must(os.Rename(p("A"), p("tmp")))
			must(os.Rename(p("d"), p("A")))
			must(os.Rename(p("tmp"), p("d")))
		}},
		{"a write in each swapped one", func() { write(t, dir, map[string]string{"A/e/five": "55", "d/b/two": "22"}) }},
		{"a directory moved out", func() { must(os.Rename(p("n"), filepath.Join(outside, "n"))) }},
		{"a write in it, outside", func() { write(t, outside, map[string]string{"n/m/new": "changed outside"}) }},
		{"moved back in", func() { must(os.Rename(filepath.Join(outside, "n"), p("n"))) }},
		{"a .gitignore ignoring a directory below", func() { write(t, dir, map[string]string{".gitignore": "node_modules/\n*.log\nb/\n"}) }},
		{"a write in the ignored directory", func() { write(t, dir, map[string]string{"d/b/two": "222"}) }},
		{"the .gitignore back", func() { write(t, dir, map[string]string{".gitignore": "node_modules/\n*.log\n"}) }},
		{"a deep .gitignore", func() { write(t, dir, map[string]string{"d/.gitignore": "c/\n"}) }},
		{"a directory removed", func() { must(os.RemoveAll(p("d"))) }},
		{"an empty directory", func() { must(os.Mkdir(p("empty"), 0o755)) }},
	}
	for _, st := range steps {
		st.do()
		sameAsWalk(t, s, dir, st.name)
		if got := watchCapture(t, s, dir); got.Listed != 0 {
			t.Errorf("after %s, the next capture listed %d directories, want 0", st.name, got.Listed)
		}
	}
}

// TestWatchHardLink: a file with another link outside the tree can change with no event
// in the tree, so its directory is listed at every capture.
func TestWatchHardLink(t *testing.T) {
	dir := watchTree(t)
	other := filepath.Join(t.TempDir(), "link")
	if err := os.Link(filepath.Join(dir, "a/b/two"), other); err != nil {
		needs.Missing(t, "no hard links in the temporary directory: %v", err)
	}
	s := newStore(t)
	watchCapture(t, s, dir)
	if got := watchCapture(t, s, dir); got.Listed != 3 {
		t.Errorf("unchanged capture listed %d directories, want 3 (a/b, which holds the linked file, and above)", got.Listed)
	}
	f, err := os.OpenFile(other, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(" and more")
	f.Close()
	sameAsWalk(t, s, dir, "a write through the other link")
}

// TestWatchRootReplaced: the directory replaced by another at its path (or its parent
// renamed) is walked anew.
func TestWatchRootReplaced(t *testing.T) {
	parentDir := t.TempDir()
	dir := filepath.Join(parentDir, "x", "p")
	write(t, dir, map[string]string{"a/x": "x", "b/y": "y"})
	s := newStore(t)
	first := watchCapture(t, s, dir)
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	write(t, dir, map[string]string{"a/x": "other x"})
	if got := sameAsWalk(t, s, dir, "the directory replaced"); got.ID == first.ID {
		t.Error("the replaced directory was taken from the watch")
	}
	// Its parent renamed, and another directory made at the old path.
	if err := os.Rename(parentDir+"/x", parentDir+"/y"); err != nil {
		t.Fatal(err)
	}
	write(t, dir, map[string]string{"c/z": "z"})
	sameAsWalk(t, s, dir, "the directory's name taken by another")
}

// TestWatchLost: events lost (the kernel's queue overflowed), other options or a failed
// capture make the next capture walk every directory.
func TestWatchLost(t *testing.T) {
	dir := watchTree(t)
	s := newStore(t)
	watchCapture(t, s, dir)
	s.watch.mu.Lock()
	s.watch.dispatch(event{overflow: true})
	s.watch.mu.Unlock()
	if got := watchCapture(t, s, dir); got.Listed != watchTreeDirs {
		t.Errorf("capture after an overflow listed %d directories, want all %d", got.Listed, watchTreeDirs)
	}
	if got := watchCapture(t, s, dir); got.Listed != 0 {
		t.Errorf("the capture after that listed %d, want 0", got.Listed)
	}
	other, err := s.Capture(t.Context(), CaptureRequest{Owner: "test", Dir: dir, Watch: true, Exclude: []string{"/d/"}})
	if err != nil || other.Listed != watchTreeDirs-2 {
		t.Errorf("capture with another exclude = %+v, %v; want every directory but d and d/e listed", other, err)
	}
	// A capture that fails has read the events: the next must not trust the watch.
	watchCapture(t, s, dir)
	write(t, dir, map[string]string{"a/b/c/three": "changed before a failure"})
	if _, err := s.Capture(t.Context(), CaptureRequest{Owner: "test", Dir: dir, Watch: true, MaxTime: 1}); err == nil {
		t.Fatal("capture past MaxTime succeeded")
	}
	if got := sameAsWalk(t, s, dir, "a failed capture"); got.Listed != watchTreeDirs {
		t.Errorf("capture after a failed one listed %d directories, want all %d", got.Listed, watchTreeDirs)
	}
}

// TestWatchReleased: the watches of directories that left the tree (moved out, or
// ignored since) are removed.
func TestWatchReleased(t *testing.T) {
	dir := watchTree(t)
	s := newStore(t)
	watchCapture(t, s, dir)
	if n := watches(s); n != watchTreeDirs {
		t.Fatalf("%d watches, want %d", n, watchTreeDirs)
	}
	if err := os.Rename(filepath.Join(dir, "a"), filepath.Join(t.TempDir(), "a")); err != nil {
		t.Fatal(err)
	}
	sameAsWalk(t, s, dir, "a moved out")
	if n := watches(s); n != 3 {
		t.Errorf("%d watches after a, a/b and a/b/c moved out, want 3", n)
	}
	write(t, dir, map[string]string{".gitignore": "node_modules/\n*.log\nd/\n"})
	sameAsWalk(t, s, dir, "d ignored")
	if n := watches(s); n != 1 {
		t.Errorf("%d watches after d was ignored, want 1", n)
	}
}

// TestWatchBound: past the store's bound of watches, the directories not watched are
// listed at every capture, and the capture is still right.
func TestWatchBound(t *testing.T) {
	dir := t.TempDir()
	for i := range 10 {
		write(t, dir, map[string]string{fmt.Sprintf("d%d/f", i): "f"})
	}
	s := newStore(t)
	s.watch.root(dir) // starts the notifier
	s.watch.mu.Lock()
	s.watch.max = 4
	s.watch.mu.Unlock()
	watchCapture(t, s, dir)
	// The top and 3 of the 10 directories are watched: the other 7 and the top are listed.
	if got := watchCapture(t, s, dir); got.Listed != 8 {
		t.Errorf("with 4 watches an unchanged capture listed %d of 11 directories, want 8", got.Listed)
	}
	for i := range 10 {
		write(t, dir, map[string]string{fmt.Sprintf("d%d/f", i): "changed", fmt.Sprintf("d%d/g", i): "new"})
	}
	sameAsWalk(t, s, dir, "changes with 4 watches")
	if n := watches(s); n != 4 {
		t.Errorf("the store holds %d watches, want its bound, 4", n)
	}
}

// TestWatchRandom: random changes, each batch checked against a walk; the watches of
// removed directories are released.
func TestWatchRandom(t *testing.T) {
	dir := t.TempDir()
	s := newStore(t)
	r := rand.New(rand.NewPCG(7, 30))
	dirs := []string{""}
	files := []string{}
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	for round := range 40 {
		for range 1 + r.IntN(6) {
			switch d := pick(dirs); r.IntN(7) {
			case 0, 1:
				f := filepath.Join(d, fmt.Sprintf("f%d", r.IntN(50)))
				write(t, dir, map[string]string{f: fmt.Sprint(r.Int())})
				files = append(files, f)
			case 2:
				sub := filepath.Join(d, fmt.Sprintf("d%d", r.IntN(20)))
				os.MkdirAll(filepath.Join(dir, sub), 0o755)
				dirs = append(dirs, sub)
			case 3:
				if len(files) > 0 {
					os.Remove(filepath.Join(dir, pick(files)))
				}
			case 4:
				if d != "" {
					os.RemoveAll(filepath.Join(dir, d))
				}
			case 5:
				if d != "" {
					to := filepath.Join(pick(dirs), fmt.Sprintf("m%d", r.IntN(20)))
					os.Rename(filepath.Join(dir, d), filepath.Join(dir, to)) // fails into itself: fine
					dirs = append(dirs, to)
				}
			case 6:
				if len(files) > 0 {
					os.Chmod(filepath.Join(dir, pick(files)), 0o700)
				}
			}
		}
		sameAsWalk(t, s, dir, fmt.Sprintf("round %d", round))
	}
	os.RemoveAll(dir)
	os.Mkdir(dir, 0o755)
	sameAsWalk(t, s, dir, "everything removed")
	if n := watches(s); n != 1 {
		t.Errorf("the store still holds %d watches for an empty directory, want 1", n)
	}
}

// TestWatchConcurrent: captures of one directory, with and without Watch, while files
// change; then one more trusting the watch records what a walk does.
func TestWatchConcurrent(t *testing.T) {
	dir := watchTree(t)
	s := newStore(t)
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for i := range 10 {
				if _, err := s.Capture(t.Context(), CaptureRequest{Owner: "test", Dir: dir, Watch: i%3 != 0}); err != nil {
					t.Error(err)
				}
			}
		})
		wg.Go(func() {
			for i := range 20 {
				write(t, dir, map[string]string{fmt.Sprintf("a/b/g%d/f%d", g, i%5): fmt.Sprint(i)})
			}
		})
	}
	wg.Wait()
	sameAsWalk(t, s, dir, "concurrent captures")
	if got := watchCapture(t, s, dir); got.Listed != 0 {
		t.Errorf("the capture after listed %d directories, want 0", got.Listed)
	}
}

// TestWatchTwoDirectories: two captured directories, one inside the other, share the
// kernel's watches and see their own changes.
func TestWatchTwoDirectories(t *testing.T) {
	dir := watchTree(t)
	inner := filepath.Join(dir, "a")
	s := newStore(t)
	watchCapture(t, s, dir)
	watchCapture(t, s, inner)
	write(t, dir, map[string]string{"a/b/c/three": "changed"})
	if got := sameAsWalk(t, s, inner, "a change, seen from a"); got.Listed != 3 {
		t.Errorf("inner capture listed %d directories, want 3", got.Listed)
	}
	if got := sameAsWalk(t, s, dir, "a change, seen from the top"); got.Listed != 4 {
		t.Errorf("outer capture listed %d directories, want 4", got.Listed)
	}
	if got := watchCapture(t, s, inner); got.Listed != 0 {
		t.Errorf("inner capture after listed %d, want 0", got.Listed)
	}
	s.watch.mu.Lock()
	var refs []int
	for _, rs := range s.watch.wds {
		refs = append(refs, len(rs))
	}
	s.watch.mu.Unlock()
	slices.Sort(refs)
	if want := []int{1, 1, 1, 2, 2, 2}; !slices.Equal(refs, want) {
		t.Errorf("references per watch = %v, want %v (a, a/b and a/b/c shared)", refs, want)
	}
}

// TestWatchOtherMountNamespace: a write through a bind mount in another user and mount
// namespace (as a fenced command makes them) is reported to the watch.
func TestWatchOtherMountNamespace(t *testing.T) {
	unshare := needs.Program(t, "unshare", "apt-get install util-linux")
	dir := watchTree(t)
	s := newStore(t)
	watchCapture(t, s, dir)
	mnt := t.TempDir()
	script := "mount --bind " + dir + " " + mnt + " && echo changed > " + mnt + "/a/b/two && mkdir " + mnt + "/a/new"
	if out, err := exec.Command(unshare, "-rm", "sh", "-c", script).CombinedOutput(); err != nil {
		needs.Missing(t, "no unprivileged user and mount namespaces: %v: %s", err, out)
	}
	if got := sameAsWalk(t, s, dir, "a write in another mount namespace"); got.Listed != 4 {
		t.Errorf("capture listed %d directories, want 4 (a/b, the new a/new, a and the top)", got.Listed)
	}
}
