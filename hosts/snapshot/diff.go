package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"strings"
)

// Kind says how a file changed between two snapshots.
type Kind string

// The kinds of change.
const (
	Added    Kind = "added"
	Modified Kind = "modified"
	Deleted  Kind = "deleted"
	Renamed  Kind = "renamed" // deleted at OldPath and added at Path with the same content
)

// DiffOptions bounds a [Store.Diff]. Zero values take the defaults.
type DiffOptions struct {
	// Paths keeps only these files and what is under these directories (a rename is kept
	// when either of its paths is); nil keeps every change.
	Paths []Path `json:"paths,omitempty"`
	// NoPatch leaves the patches out: the kinds and line counts only.
	NoPatch bool `json:"no_patch,omitempty"`
	// Context is the number of unchanged lines around each change; 0 means 3.
	Context int `json:"context,omitempty"`
	// MaxFilePatch bounds one file's patch in bytes; 0 means 64 KiB.
	MaxFilePatch int `json:"max_file_patch,omitempty"`
	// MaxPatch bounds the patches of the whole diff in bytes; 0 means 1 MiB. The files
	// past it get their counts without a patch.
	MaxPatch int `json:"max_patch,omitempty"`
}

// Diff is what changed from one snapshot to another.
type Diff struct {
	From    ID       `json:"from"`
	To      ID       `json:"to"`
	Dir     string   `json:"dir"`
	Changes []Change `json:"changes"` // by path
	// Cut reports that some patch was cut or left out (see [Change.Cut]).
	Cut bool `json:"cut,omitempty"`
}

// Change is one file that differs. A directory appears only when it was added or removed
// empty; otherwise the files in it say what happened.
type Change struct {
	Path    Path   `json:"path"`
	Kind    Kind   `json:"kind"`
	OldPath Path   `json:"old_path,omitempty"` // Renamed: where it was
	Before  *Entry `json:"before,omitempty"`   // nil when Added
	After   *Entry `json:"after,omitempty"`    // nil when Deleted
	// Untracked: one side's capture did not see the file (the .gitignore files left it
	// out there, or it was in a directory that could not be read, or it is outside the
	// directory and was not named there), so Added or Deleted says only that the capture
	// began or stopped seeing it. Restore leaves such a file alone.
	Untracked bool `json:"untracked,omitempty"`
	// Binary: a version holds a NUL byte in its first 8000 (git's test); no lines then.
	Binary bool `json:"binary,omitempty"`
	// LinesAdded and LinesDeleted count the lines of a text file's change.
	LinesAdded   int `json:"lines_added"`
	LinesDeleted int `json:"lines_deleted"`
	// Patch holds the unified diff's hunks, from the first "@@" line. Empty for a
	// binary file, a symlink, a file not stored, or a patch left out.
	Patch string `json:"patch,omitempty"`
	// Cut: the patch stops before its end (MaxFilePatch) or was left out (MaxPatch).
	Cut bool `json:"cut,omitempty"`
}

// Diff compares two snapshots of the same directory: what changed from from to to.
func (s *Store) Diff(ctx context.Context, from, to ID, o DiffOptions) (*Diff, error) {
	s.gc.RLock()
	defer s.gc.RUnlock()
	ra, err := s.record(from)
	if err != nil {
		return nil, err
	}
	rb, err := s.record(to)
	if err != nil {
		return nil, err
	}
	chs, err := s.changes(ctx, ra, rb)
	if err != nil {
		return nil, fmt.Errorf("diff %s %s: %w", from, to, err)
	}
	d := &Diff{From: from, To: to, Dir: rb.dir, Changes: []Change{}}
	if o.Context <= 0 {
		o.Context = 3
	}
	if o.MaxFilePatch <= 0 {
		o.MaxFilePatch = 64 << 10
	}
	if o.MaxPatch <= 0 {
		o.MaxPatch = 1 << 20
	}
	budget := o.MaxPatch
	for _, c := range publicChanges(chs) {
		if !selected(o.Paths, c.Path, c.OldPath) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := s.patch(&c, o, &budget); err != nil {
			return nil, fmt.Errorf("diff %s: %w", c.Path, err)
		}
		d.Cut = d.Cut || c.Cut
		d.Changes = append(d.Changes, c.Change)
	}
	return d, nil
}

// selected reports whether a change at p (renamed from old) is under one of paths.
func selected(paths []Path, p, old Path) bool {
	if paths == nil {
		return true
	}
	for _, q := range paths {
		q := strings.TrimSuffix(string(q), "/")
		if q == "" || q == "." || under(string(p), q) || (old != "" && under(string(old), q)) {
			return true
		}
	}
	return false
}

// pubChange is a Change with the entries it came from.
type pubChange struct {
	Change
	before, after *entry
}

// publicChanges turns the changes of paths into the changes shown: a change between a
// directory and a file split in two, directories left out unless empty, renames paired.
func publicChanges(chs []change) []pubChange {
	var out []pubChange
	add := func(p string, before, after *entry, untracked bool) {
		c := pubChange{Change: Change{Path: Path(p), Untracked: untracked}, before: before, after: after}
		switch {
		case before == nil:
			c.Kind = Added
		case after == nil:
			c.Kind = Deleted
		default:
			c.Kind = Modified
		}
		if before != nil {
			c.Before = before.public()
		}
		if after != nil {
			c.After = after.public()
		}
		out = append(out, c)
	}
	for i, c := range chs {
		// a directory is shown only if nothing under it changed
		dirShown := func() bool {
			return i+1 >= len(chs) || !strings.HasPrefix(chs[i+1].path, c.path+"/")
		}
		b, a := c.before, c.after
		switch {
		case b != nil && a != nil && b.isDir() != a.isDir():
			if !b.isDir() || dirShown() {
				add(c.path, b, nil, c.afterUnknown)
			}
			if !a.isDir() || dirShown() {
				add(c.path, nil, a, c.beforeUnknown)
			}
		case (b != nil && b.isDir()) || (a != nil && a.isDir()):
			if dirShown() && (b == nil || a == nil) {
				add(c.path, b, a, c.beforeUnknown || c.afterUnknown)
			}
		default:
			add(c.path, b, a, c.beforeUnknown || c.afterUnknown)
		}
	}
	// Renames: a file deleted and one added with the same content (empty files aside).
	gone := map[sum][]int{}
	for i, c := range out {
		if c.Kind == Deleted && !c.Untracked && c.before.kind == kFile && c.before.size > 0 {
			gone[c.before.hash] = append(gone[c.before.hash], i)
		}
	}
	drop := map[int]bool{}
	for i := range out {
		c := &out[i]
		if c.Kind != Added || c.Untracked || c.after.kind != kFile {
			continue
		}
		if olds := gone[c.after.hash]; len(olds) > 0 {
			j := olds[0]
			gone[c.after.hash] = olds[1:]
			c.Kind, c.OldPath, c.Before, c.before = Renamed, out[j].Path, out[j].Before, out[j].before
			drop[j] = true
		}
	}
	if len(drop) > 0 {
		kept := out[:0]
		for i, c := range out {
			if !drop[i] {
				kept = append(kept, c)
			}
		}
		out = kept
	}
	return out
}

// patch fills in a change's line counts and patch.
func (s *Store) patch(c *pubChange, o DiffOptions, budget *int) error {
	if c.Kind == Renamed && c.before.hash == c.after.hash {
		return nil
	}
	textual := func(e *entry) bool { return e == nil || e.kind == kFile }
	if !textual(c.before) || !textual(c.after) {
		return nil // a symlink, a directory or a file not stored on one side
	}
	var old, new []byte
	var err error
	if c.before != nil {
		if old, err = s.object(c.before.hash); err != nil {
			return err
		}
	}
	if c.after != nil {
		if new, err = s.object(c.after.hash); err != nil {
			return err
		}
	}
	if isBinary(old) || isBinary(new) {
		c.Binary = true
		return nil
	}
	a, b := splitLines(old), splitLines(new)
	edits := diffLines(a, b)
	limit := min(o.MaxFilePatch, *budget)
	if o.NoPatch {
		limit = 0
	}
	patch, added, deleted, cut := unified(a, b, edits, o.Context, limit)
	c.LinesAdded, c.LinesDeleted = added, deleted
	if !o.NoPatch {
		c.Patch, c.Cut = patch, cut
		*budget -= len(patch)
	}
	return nil
}

// isBinary reports whether data holds a NUL in its first 8000 bytes.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}
