package snapshot

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func sh(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sh -c %q: %v: %s", script, err, out)
	}
}

func restore(t *testing.T, s *Store, r RestoreRequest) *RestoreResult {
	t.Helper()
	res, err := s.Restore(t.Context(), r)
	if err != nil {
		t.Fatalf("Restore(%+v): %v", r, err)
	}
	return res
}

func diff(t *testing.T, s *Store, from, to ID) *Diff {
	t.Helper()
	d, err := s.Diff(t.Context(), from, to, DiffOptions{})
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	return d
}

// kinds returns a diff's changes as "kind path" lines ("renamed old -> new").
func kinds(d *Diff) []string {
	var out []string
	for _, c := range d.Changes {
		line := string(c.Kind) + " " + string(c.Path)
		if c.Kind == Renamed {
			line = string(c.Kind) + " " + string(c.OldPath) + " -> " + string(c.Path)
		}
		if c.Untracked {
			line += " (untracked)"
		}
		out = append(out, line)
	}
	return out
}

// TestTurn runs a turn's change on a small project, then checks the diff, that undo puts
// back the tree byte for byte and that redo puts back the turn's result.
func TestTurn(t *testing.T) {
	base := map[string]string{
		".gitignore":          "node_modules/\n*.log\n",
		"a.txt":               "one\ntwo\nthree\n",
		"b.txt":               "bee\n",
		"src/main.go":         "package main\n\nfunc main() {}\n",
		"src/util/u.go":       "package util\n",
		"script.sh":           "#!/bin/sh\necho hi\n",
		"node_modules/x/i.js": "module.exports = 1\n",
		"keep/":               "",
		".git/HEAD":           "ref: refs/heads/main\n",
	}
	for _, tt := range []struct {
		name   string
		script string
		want   []string
	}{
		{"edit", "printf 'one\\n2\\nthree\\n' > a.txt.new && cat a.txt.new > a.txt && rm a.txt.new", []string{"modified a.txt"}},
		{"sed -i", "sed -i 's/two/TWO/' a.txt", []string{"modified a.txt"}},
		{"truncate", ": > a.txt", []string{"modified a.txt"}},
		{"rm", "rm b.txt src/util/u.go", []string{"deleted b.txt", "deleted src/util/u.go"}},
		{"mv", "mv src/main.go src/app.go", []string{"renamed src/main.go -> src/app.go"}},
		{"chmod", "chmod +x a.txt", []string{"modified a.txt"}},
		{"symlink", "ln -s a.txt link && ln -s ../../../../etc/passwd out && ln -s /etc out2", []string{"added link", "added out", "added out2"}},
		{"new dir", "mkdir -p new/deeper && echo n > new/deeper/n.txt", []string{"added new/deeper/n.txt"}},
		{"empty dirs", "mkdir empty && rmdir keep", []string{"added empty", "deleted keep"}},
		{"ignored", "echo y > node_modules/x/y.js && echo l > debug.log && echo g > .git/config", nil},
		{"file to dir", "rm b.txt && mkdir b.txt && echo x > b.txt/x", []string{"deleted b.txt", "added b.txt/x"}},
		{"dir to symlink", "rm -r src/util && ln -s /tmp src/util", []string{"added src/util", "deleted src/util/u.go"}},
		{"rm -r", "rm -r src", []string{"deleted src/main.go", "deleted src/util/u.go"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, base)
			os.Chmod(filepath.Join(dir, "script.sh"), 0o755)
			before := tree(t, dir)
			s := newStore(t)
			id0 := capture(t, s, dir)
			sh(t, dir, tt.script)
			after := tree(t, dir)
			id1 := capture(t, s, dir)
			d := diff(t, s, id0, id1)
			if got := kinds(d); !slices.Equal(got, tt.want) {
				t.Errorf("Diff = %q, want %q", got, tt.want)
			}
			res := restore(t, s, RestoreRequest{From: id1, To: id0})
			if len(res.Conflicts) > 0 {
				t.Errorf("undo conflicts: %+v", res.Conflicts)
			}
			want := before
			if tt.want == nil {
				want = after // only ignored files changed: undo has nothing to do
			}
			if got := tree(t, dir); !maps.Equal(got, want) {
				t.Errorf("after undo:\n%q\nwant\n%q", got, want)
			}
			res = restore(t, s, RestoreRequest{From: id0, To: id1})
			if len(res.Conflicts) > 0 {
				t.Errorf("redo conflicts: %+v", res.Conflicts)
			}
			if got := tree(t, dir); !maps.Equal(got, after) {
				t.Errorf("after redo:\n%q\nwant\n%q", got, after)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*", ".myco-restore-*")); len(left) > 0 {
				t.Errorf("temporary files left: %q", left)
			}
		})
	}
}

func TestRestoreConflict(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a": "a0\n", "b": "b0\n", "c": "c0\n"})
	s := newStore(t)
	id0 := capture(t, s, dir)
	write(t, dir, map[string]string{"a": "a1\n", "b": "b1\n", "c": "c1\n"})
	id1 := capture(t, s, dir)
	// after the turn, the person changes b and removes c
	write(t, dir, map[string]string{"b": "mine\n"})
	os.Remove(filepath.Join(dir, "c"))

	// A dry run says the same and writes nothing.
	want := []Conflict{{Path: "b", Reason: ReasonChanged}, {Path: "c", Reason: ReasonChanged}}
	dry := restore(t, s, RestoreRequest{From: id1, To: id0, DryRun: true})
	if !slices.Equal(dry.Restored, []Path{"a"}) || !slices.Equal(dry.Conflicts, want) {
		t.Errorf("dry run = %+v, want a restored, b and c conflicts", dry)
	}
	if got := tree(t, dir); got["a"] != "a1\n" {
		t.Errorf("after a dry run a = %q, want it left as a1", got["a"])
	}

	res := restore(t, s, RestoreRequest{From: id1, To: id0})
	if got, want := res.Restored, []Path{"a"}; !slices.Equal(got, want) {
		t.Errorf("Restored = %q, want %q", got, want)
	}
	if !slices.Equal(res.Conflicts, want) {
		t.Errorf("Conflicts = %+v, want %+v", res.Conflicts, want)
	}
	if got := tree(t, dir); got["a"] != "a0\n" || got["b"] != "mine\n" || got["c"] != "" {
		t.Errorf("tree = %q, want a restored, b and c left alone", got)
	}

	// Force overwrites the one named.
	res = restore(t, s, RestoreRequest{From: id1, To: id0, Force: []Path{"b"}})
	if got, want := res.Restored, []Path{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("forced: Restored = %q, want %q", got, want)
	}
	if got := tree(t, dir); got["b"] != "b0\n" {
		t.Errorf("forced: b = %q, want b0", got["b"])
	}
	// One file alone.
	res = restore(t, s, RestoreRequest{From: id1, To: id0, Paths: []Path{"c"}, Force: []Path{"c"}})
	if got, want := res.Restored, []Path{"c"}; !slices.Equal(got, want) || len(res.Conflicts) > 0 {
		t.Errorf("revert of c: %+v, want c restored", res)
	}
}

// TestRestoreResumes: a restore cut short by a crash (some files put back, one temporary
// file left) completes when run again, and says so.
func TestRestoreResumes(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d/e", "d/f"} {
		files[n] = n + "0\n"
	}
	write(t, dir, files)
	s := newStore(t)
	id0 := capture(t, s, dir)
	before := tree(t, dir)
	for n := range files {
		files[n] = n + "1\n"
	}
	files["g"] = "new\n"
	write(t, dir, files)
	id1 := capture(t, s, dir)

	// The crash: half the files back, a temporary file beside one.
	restore(t, s, RestoreRequest{From: id1, To: id0, Paths: []Path{"a", "d/e", "g"}})
	write(t, dir, map[string]string{"d/.myco-restore-0123456789abcdef": "partial"})
	os.Remove(filepath.Join(dir, "d/.myco-restore-0123456789abcdef"))

	res := restore(t, s, RestoreRequest{From: id1, To: id0})
	want := []Path{"a", "b", "c", "d/e", "d/f", "g"}
	if !slices.Equal(res.Restored, want) || len(res.Conflicts) > 0 {
		t.Errorf("second run: %+v, want every file restored", res)
	}
	if got := tree(t, dir); !maps.Equal(got, before) {
		t.Errorf("tree = %q, want %q", got, before)
	}
}

// TestRestoreNeverFollowsSymlinks: a directory replaced by a symlink out of the tree after
// the turn blocks the restore of what was in it; nothing is written outside.
func TestRestoreNeverFollowsSymlinks(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, map[string]string{"x.txt": "outside\n"})
	dir := t.TempDir()
	write(t, dir, map[string]string{"sub/x.txt": "x0\n", "link": ""})
	os.Remove(filepath.Join(dir, "link"))
	os.Symlink(filepath.Join(outside, "x.txt"), filepath.Join(dir, "link"))
	s := newStore(t)
	id0 := capture(t, s, dir)
	write(t, dir, map[string]string{"sub/x.txt": "x1\n"})
	os.Remove(filepath.Join(dir, "link"))
	write(t, dir, map[string]string{"link": "a file now\n"})
	id1 := capture(t, s, dir)
	// later: sub becomes a symlink to the outside directory
	os.RemoveAll(filepath.Join(dir, "sub"))
	os.Symlink(outside, filepath.Join(dir, "sub"))

	res := restore(t, s, RestoreRequest{From: id1, To: id0, Force: []Path{"sub"}})
	if len(res.Conflicts) != 1 || res.Conflicts[0].Path != "sub/x.txt" || res.Conflicts[0].Reason != ReasonBlocked {
		t.Errorf("Conflicts = %+v, want sub/x.txt blocked", res.Conflicts)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "x.txt")); string(b) != "outside\n" {
		t.Errorf("the file outside became %q", b)
	}
	// the symlink itself is put back, not written through
	if target, err := os.Readlink(filepath.Join(dir, "link")); err != nil || target != filepath.Join(outside, "x.txt") {
		t.Errorf("link = %q, %v; want the symlink back", target, err)
	}
	// and redo replaces the symlink with a file without touching its target
	restore(t, s, RestoreRequest{From: id0, To: id1, Paths: []Path{"link"}})
	if b, _ := os.ReadFile(filepath.Join(outside, "x.txt")); string(b) != "outside\n" {
		t.Errorf("redo wrote through the link: %q", b)
	}
	if info, err := os.Lstat(filepath.Join(dir, "link")); err != nil || !info.Mode().IsRegular() {
		t.Errorf("link after redo: %v, %v; want a regular file", info, err)
	}
}

// TestRestoreLeavesUntracked: a turn that stops ignoring build/ shows its files as added
// but untracked, and undo leaves them.
func TestRestoreLeavesUntracked(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{".gitignore": "build/\n", "build/out.bin": "artifact\n", "a": "a\n"})
	s := newStore(t)
	id0 := capture(t, s, dir)
	write(t, dir, map[string]string{".gitignore": "\n"})
	id1 := capture(t, s, dir)
	if got, want := kinds(diff(t, s, id0, id1)), []string{"modified .gitignore", "added build/out.bin (untracked)"}; !slices.Equal(got, want) {
		t.Errorf("Diff = %q, want %q", got, want)
	}
	res := restore(t, s, RestoreRequest{From: id1, To: id0})
	if got := tree(t, dir); got["build/out.bin"] != "artifact\n" || got[".gitignore"] != "build/\n" {
		t.Errorf("after undo: %q, want build/out.bin kept and .gitignore back", got)
	}
	if want := []Conflict{{Path: "build/out.bin", Reason: ReasonUntracked, Detail: "not captured in the snapshot restored"}}; !slices.Equal(res.Conflicts, want) {
		t.Errorf("Conflicts = %+v, want %+v", res.Conflicts, want)
	}
}

func TestRestoreOverCap(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x", 3000)
	write(t, dir, map[string]string{"big": big, "small": "s"})
	s, err := Open(Options{Dir: t.TempDir(), MaxFileSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap0, err := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if snap0.NotStored != 1 || snap0.Files != 2 {
		t.Errorf("Capture = %+v, want 2 files, 1 not stored", snap0)
	}
	write(t, dir, map[string]string{"big": big + "y", "small": "t"})
	snap1, _ := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir})
	d := diff(t, s, snap0.ID, snap1.ID)
	if len(d.Changes) != 2 || !d.Changes[0].After.NotStored || d.Changes[0].Patch != "" {
		t.Errorf("Diff = %+v, want big changed, not stored", d.Changes)
	}
	res := restore(t, s, RestoreRequest{From: snap1.ID, To: snap0.ID})
	if want := []Conflict{{Path: "big", Reason: ReasonNotStored}}; !slices.Equal(res.Conflicts, want) || !slices.Equal(res.Restored, []Path{"small"}) {
		t.Errorf("Restore = %+v, want small restored and big not stored", res)
	}
	// The request's cap in place of the store's: big is stored now.
	snap2, err := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir, MaxFileSize: 4000})
	if err != nil || snap2.NotStored != 0 {
		t.Errorf("Capture with a cap of 4000 = %+v, %v; want every file stored", snap2, err)
	}
}

// TestRestoreOutside: a file outside the directory, captured one by one.
func TestRestoreOutside(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	out := filepath.Join(other, "notes.md")
	gone := filepath.Join(other, "new.md")
	write(t, other, map[string]string{"notes.md": "v0\n"})
	s := newStore(t)
	req := CaptureRequest{Owner: "o", Dir: dir, Files: []string{out, gone}}
	snap0, err := s.Capture(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	write(t, other, map[string]string{"notes.md": "v1\n", "new.md": "n\n"})
	snap1, err := s.Capture(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(diff(t, s, snap0.ID, snap1.ID)), []string{"added " + gone, "modified " + out}; !slices.Equal(got, want) {
		t.Errorf("Diff = %q, want %q", got, want)
	}
	res := restore(t, s, RestoreRequest{From: snap1.ID, To: snap0.ID})
	if len(res.Conflicts) > 0 || len(res.Restored) != 2 {
		t.Errorf("Restore = %+v", res)
	}
	if b, _ := os.ReadFile(out); string(b) != "v0\n" {
		t.Errorf("notes.md = %q, want v0", b)
	}
	if _, err := os.Lstat(gone); !os.IsNotExist(err) {
		t.Errorf("new.md still there: %v", err)
	}
	// a snapshot that did not name the file knows nothing of it
	snap2, _ := s.Capture(t.Context(), CaptureRequest{Owner: "o", Dir: dir})
	if got, want := kinds(diff(t, s, snap2.ID, snap0.ID)), []string{"added " + out + " (untracked)"}; !slices.Equal(got, want) {
		t.Errorf("Diff from a snapshot without it = %q, want %q", got, want)
	}
}
