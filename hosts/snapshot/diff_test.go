package snapshot

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestDiffPatches(t *testing.T) {
	dir := t.TempDir()
	var long strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	write(t, dir, map[string]string{
		"a.go":    "package a\n\nfunc A() {}\n",
		"long":    long.String(),
		"bin":     "\x00\x01\x02",
		"same":    "moved content\n",
		"gone.md": "# gone\n",
	})
	s := newStore(t)
	id0 := capture(t, s, dir)
	write(t, dir, map[string]string{
		"a.go":    "package a\n\nfunc A() { println() }\n",
		"long":    strings.ReplaceAll(long.String(), "line", "LINE"),
		"bin":     "\x00\x01\x03",
		"new.txt": "fresh\nlines\n",
	})
	sh(t, dir, "mv same moved && rm gone.md")
	id1 := capture(t, s, dir)

	d, err := s.Diff(t.Context(), id0, id1, DiffOptions{MaxFilePatch: 4096})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"modified a.go", "modified bin", "deleted gone.md", "modified long", "renamed same -> moved", "added new.txt"}
	slices.Sort(want)
	got := kinds(d)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("Diff = %q, want %q", got, want)
	}
	by := map[Path]Change{}
	for _, c := range d.Changes {
		by[c.Path] = c
	}
	if c := by["a.go"]; c.Patch != "@@ -1,3 +1,3 @@\n package a\n \n-func A() {}\n+func A() { println() }\n" || c.LinesAdded != 1 || c.LinesDeleted != 1 {
		t.Errorf("a.go: %+v", c)
	}
	if c := by["bin"]; !c.Binary || c.Patch != "" || c.LinesAdded != 0 {
		t.Errorf("bin: %+v, want binary without lines", c)
	}
	if c := by["long"]; !c.Cut || len(c.Patch) > 4096 || c.LinesAdded != 2000 || c.LinesDeleted != 2000 {
		t.Errorf("long: cut %v, %d bytes, +%d -%d; want cut at 4096 with the whole counts", c.Cut, len(c.Patch), c.LinesAdded, c.LinesDeleted)
	}
	if c := by["new.txt"]; c.Patch != "@@ -0,0 +1,2 @@\n+fresh\n+lines\n" || c.Before != nil || c.After.Size != 12 {
		t.Errorf("new.txt: %+v", c)
	}
	if c := by["moved"]; c.OldPath != "same" || c.Patch != "" {
		t.Errorf("moved: %+v", c)
	}
	if !d.Cut {
		t.Error("Diff.Cut = false, want true")
	}

	// The diff's budget: the first patch fills it, the later ones get counts only.
	d, _ = s.Diff(t.Context(), id0, id1, DiffOptions{MaxPatch: 100})
	total := 0
	for _, c := range d.Changes {
		total += len(c.Patch)
	}
	if total > 100 || !d.Cut {
		t.Errorf("MaxPatch 100: %d bytes of patches, cut %v", total, d.Cut)
	}
	d, _ = s.Diff(t.Context(), id0, id1, DiffOptions{NoPatch: true})
	for _, c := range d.Changes {
		if c.Patch != "" || c.Cut {
			t.Errorf("NoPatch: %s has a patch", c.Path)
		}
		if c.Path == "long" && c.LinesAdded != 2000 {
			t.Errorf("NoPatch: long +%d, want 2000", c.LinesAdded)
		}
	}
	// One file, and a rename by either of its names.
	for _, tt := range []struct {
		paths []Path
		want  []string
	}{
		{[]Path{"a.go"}, []string{"modified a.go"}},
		{[]Path{"same"}, []string{"renamed same -> moved"}},
		{[]Path{"moved"}, []string{"renamed same -> moved"}},
		{[]Path{"nothing"}, nil},
	} {
		d, _ := s.Diff(t.Context(), id0, id1, DiffOptions{Paths: tt.paths})
		if got := kinds(d); !slices.Equal(got, tt.want) {
			t.Errorf("Diff(Paths: %q) = %q, want %q", tt.paths, got, tt.want)
		}
	}
	// The reverse diff.
	back := kinds(diff(t, s, id1, id0))
	slices.Sort(back)
	wantBack := []string{"added gone.md", "deleted new.txt", "modified a.go", "modified bin", "modified long", "renamed moved -> same"}
	if !slices.Equal(back, wantBack) {
		t.Errorf("reverse Diff = %q, want %q", back, wantBack)
	}
	// The same snapshot: nothing.
	if d := diff(t, s, id1, id1); len(d.Changes) != 0 || d.Changes == nil {
		t.Errorf("Diff of a snapshot with itself = %#v, want an empty list", d.Changes)
	}
}

func TestDiffUnknown(t *testing.T) {
	s := newStore(t)
	dir := t.TempDir()
	id := capture(t, s, dir)
	if _, err := s.Diff(t.Context(), id, ID(strings.Repeat("0", 64)), DiffOptions{}); err == nil {
		t.Error("Diff with an unknown snapshot succeeded")
	}
	if _, err := s.Diff(t.Context(), id, "nonsense", DiffOptions{}); err == nil {
		t.Error("Diff with a malformed id succeeded")
	}
	other := capture(t, s, t.TempDir())
	if _, err := s.Diff(t.Context(), id, other, DiffOptions{}); err == nil {
		t.Error("Diff of two directories succeeded")
	}
}
