package workspace

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func names(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Name)
	}
	return out
}

func TestLoadOrderLabelsAndSkips(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "b.md"), "second\n\n")
	write(t, filepath.Join(dir, "a.md"), "first")
	write(t, filepath.Join(dir, "c.md"), " \n\t\n")           // empty
	write(t, filepath.Join(dir, ".hidden.md"), "hidden")      // hidden
	write(t, filepath.Join(dir, ".add-123.tmp"), "partial")   // an add in progress
	write(t, filepath.Join(dir, "notes.txt"), "not markdown") // not Markdown
	write(t, filepath.Join(dir, "sub", "d.md"), "nested")     // a directory, not an entry
	if err := os.Symlink(filepath.Join(dir, "a.md"), filepath.Join(dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	p := Prelude{Dir: dir}
	entries, err := p.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(entries), []string{"a.md", "b.md"}; !slices.Equal(got, want) {
		t.Fatalf("Load() names = %v, want %v", got, want)
	}
	want := "[prelude entry a.md]\nfirst\n\n[prelude entry b.md]\nsecond\n"
	if got := RenderEntries(entries); got != want {
		t.Errorf("RenderEntries = %q, want %q", got, want)
	}
	if RenderedSize(entries) != len(want) {
		t.Errorf("RenderedSize = %d, want %d", RenderedSize(entries), len(want))
	}
	if entries, err := (&Prelude{Dir: filepath.Join(dir, "missing")}).Load(); err != nil || len(entries) != 0 {
		t.Errorf("Load of a missing directory = %v, %v; want an empty prelude", entries, err)
	}
}

func TestAddReplaceRemove(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2026, 12, 3, 8, 15, 0, 0, time.UTC)
	p := Prelude{Dir: dir, Now: func() time.Time { clock = clock.Add(time.Second); return clock }}
	a, err := p.Add("alpha", "Build Notes!")
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := filepath.Match("20261203-081501.000-??????-build-notes.md", a); !ok {
		t.Errorf("Add name = %q, want time, a unique part and the slug", a)
	}
	b, err := p.Add("beta", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Add("  \n", ""); err == nil {
		t.Error("Add of empty content succeeded")
	}
	c, err := p.Replace(a, "alpha 2", "build notes")
	if err != nil {
		t.Fatalf("Replace: %v", err)
	}
	entries, _ := p.Load()
	if got, want := names(entries), []string{b, c}; !slices.Equal(got, want) {
		t.Errorf("after Replace, entries = %v, want %v (filename order is creation order)", got, want)
	}
	// Another agent replaced a first: this replacement still lands, as a second candidate.
	d, err := p.Replace(a, "alpha 3", "")
	var gone *GoneError
	if !errors.As(err, &gone) || !errors.Is(err, ErrNoEntry) || gone.New != d {
		t.Errorf("Replace of a removed entry = %q, %v; want a GoneError naming the new entry", d, err)
	}
	if entries, _ := p.Load(); !slices.Equal(names(entries), []string{b, c, d}) {
		t.Errorf("after a late Replace, entries = %v, want both candidates", names(entries))
	}
	if err := p.Remove(d); err != nil {
		t.Fatal(err)
	}
	if err := p.Remove(b); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{b, "../x.md", ".hidden.md", "notes.txt"} {
		if err := p.Remove(bad); !errors.Is(err, ErrNoEntry) {
			t.Errorf("Remove(%q) = %v, want ErrNoEntry", bad, err)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestSizeCap(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.md"), strings.Repeat("x", 100))
	p := Prelude{Dir: dir, Max: 200}
	if _, err := p.Add(strings.Repeat("y", 100), ""); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Add over the cap = %v, want ErrTooLarge", err)
	} else if !strings.Contains(err.Error(), "over the cap of 200") {
		t.Errorf("error %q does not name the cap", err)
	}
	if entries, _ := p.Load(); len(entries) != 1 {
		t.Errorf("a refused add wrote an entry: %v", names(entries))
	}
	// Replacing a.md frees its bytes.
	if _, err := p.Replace("a.md", strings.Repeat("y", 100), ""); err != nil {
		t.Errorf("Replace within the cap = %v", err)
	}
	if err := p.Check(); err != nil {
		t.Errorf("Check within the cap = %v", err)
	}
	write(t, filepath.Join(dir, "z.md"), strings.Repeat("z", 300))
	err := p.Check()
	if err == nil || !strings.Contains(err.Error(), "over max_prelude_bytes = 200") || !strings.Contains(err.Error(), "prune entries") || !strings.Contains(err.Error(), "raise max_prelude_bytes") {
		t.Errorf("Check over the cap = %v, want both sizes and both fixes", err)
	}
}

// TestConcurrentProcesses runs two processes that add entries and replace the same entry
// at the same time: no add is lost, and both replacements survive as candidates.
func TestConcurrentProcesses(t *testing.T) {
	if os.Getenv("PRELUDE_WORKER") != "" {
		return
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "shared.md"), "shared note")
	const adds = 40
	var cmds []*exec.Cmd
	for i := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPreludeWorker$")
		cmd.Env = append(os.Environ(), "PRELUDE_WORKER="+fmt.Sprint(i), "PRELUDE_DIR="+dir, fmt.Sprintf("PRELUDE_ADDS=%d", adds))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("worker: %v", err)
		}
	}
	entries, err := (&Prelude{Dir: dir}).Load()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range entries {
		count[e.Content]++
	}
	for w := range 2 {
		for i := range adds {
			if c := count[fmt.Sprintf("worker %d note %d", w, i)]; c != 1 {
				t.Errorf("worker %d note %d present %d times, want 1", w, i, c)
			}
		}
		if c := count[fmt.Sprintf("worker %d replacement", w)]; c != 1 {
			t.Errorf("worker %d's replacement present %d times, want 1", w, c)
		}
	}
	if count["shared note"] != 0 {
		t.Error("the replaced entry is still there")
	}
}

// TestPreludeWorker is the body of one process of TestConcurrentProcesses.
func TestPreludeWorker(t *testing.T) {
	id := os.Getenv("PRELUDE_WORKER")
	if id == "" {
		return
	}
	p := Prelude{Dir: os.Getenv("PRELUDE_DIR")}
	var adds int
	fmt.Sscan(os.Getenv("PRELUDE_ADDS"), &adds)
	for i := range adds {
		if _, err := p.Add(fmt.Sprintf("worker %s note %d", id, i), "w"+id); err != nil {
			t.Fatal(err)
		}
		if i == adds/2 {
			var gone *GoneError
			if _, err := p.Replace("shared.md", "worker "+id+" replacement", ""); err != nil && !errors.As(err, &gone) {
				t.Fatal(err)
			}
		}
	}
}

// TestOversizeEntry: an entry's size is checked before it is read, everywhere the prelude
// is read (the startup check, the prompt build, the scan before every step, the tool's
// loads): a 1 GiB entry is never read, and is shown as a notice naming its size.
func TestOversizeEntry(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.md"), "small note")
	huge := filepath.Join(dir, "b-huge.md")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	p := Prelude{Dir: dir, Max: 1000}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)

	err = p.Check()
	if err == nil || !strings.Contains(err.Error(), "entry b-huge.md alone is 1073741824 bytes and was not read") || !strings.Contains(err.Error(), "over max_prelude_bytes = 1000") {
		t.Errorf("Check = %v, want the entry and its size named", err)
	}
	entries, err := p.Load()
	if err != nil || len(entries) != 2 || !entries[1].Unread || entries[1].Content != "" || entries[1].Size != 1<<30 {
		t.Fatalf("Load = %+v, %v; want b-huge.md unread", entries, err)
	}
	size := int64(1 << 30)
	for _, w := range []*Watcher{p.Watcher(), NewWatcher(dir)} {
		snap, err := w.Prompt()
		if err != nil {
			t.Fatal(err)
		}
		block := PreludeBlock(dir, snap)
		if len(block) > 4096 || !strings.Contains(block, fmt.Sprintf("[prelude entry b-huge.md]\n[myco: this entry was not read: its file is %d bytes", size)) || !strings.Contains(block, "small note") {
			t.Errorf("PreludeBlock (%d bytes) =\n%.2000s", len(block), block)
		}
		if note, err := w.Step("t", true); err != nil || note != "" {
			t.Errorf("Step = %q, %v; want no note", note, err)
		}
		size++
		if err := os.Truncate(huge, size); err != nil {
			t.Fatal(err)
		}
		if note, err := w.Step("t", true); err != nil || !strings.Contains(note, "Modified: b-huge.md.") {
			t.Errorf("Step after the huge entry changed = %q, %v; want it modified", note, err)
		}
	}
	if _, err := p.Add("more", ""); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Add next to a huge entry = %v, want ErrTooLarge", err)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Errorf("reading a prelude with a 1 GiB entry allocated %d MiB", n>>20)
	}
	if err := p.Remove("b-huge.md"); err != nil {
		t.Fatal(err)
	}
	if err := p.Check(); err != nil {
		t.Errorf("Check after the removal = %v", err)
	}
}

// TestEntryGrowsPastLimit: a file that grows between its stat and its read is read no
// further than the bound and counts as unread.
func TestEntryGrowsPastLimit(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.md"), strings.Repeat("x", 50))
	c, err := readEntry(dir, "a.md", 10)
	if err != nil || !c.entry.Unread || c.entry.Content != "" {
		t.Errorf("readEntry over the limit = %+v, %v; want unread", c.entry, err)
	}
	if c, err := readEntry(dir, "a.md", 50); err != nil || c.entry.Unread || len(c.entry.Content) != 50 {
		t.Errorf("readEntry at the limit = %+v, %v; want read", c.entry, err)
	}
}

// TestScanSpecialFiles: a FIFO or a socket among the entries, or swapped in after the
// listing, neither blocks a scan nor fails it; a symlink is not followed.
func TestScanSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.md"), "a")
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "sock.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	outside := filepath.Join(t.TempDir(), "secret")
	write(t, outside, "secret")
	if err := os.Symlink(outside, filepath.Join(dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		entries, err := (&Prelude{Dir: dir}).Load()
		if err == nil && !slices.Equal(names(entries), []string{"a.md"}) {
			err = fmt.Errorf("entries %v, want only a.md", names(entries))
		}
		for _, name := range []string{"fifo.md", "sock.md", "link.md"} {
			if _, rerr := readEntry(dir, name, 100); !errors.Is(rerr, errNotRegular) && err == nil {
				err = fmt.Errorf("readEntry(%s) = %v, want errNotRegular", name, rerr)
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the scan blocked on a special file")
	}
}
