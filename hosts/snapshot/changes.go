package snapshot

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// change is a path whose state differs between two snapshots.
type change struct {
	path          string
	before, after *entry // nil: absent (or unknown)
	// the path was outside what the side's capture saw: its state there is unknown
	beforeUnknown, afterUnknown bool
}

// changes returns the paths whose states differ from ra to rb, sorted.
func (s *Store) changes(ctx context.Context, ra, rb *record) ([]change, error) {
	if ra.dir != rb.dir {
		return nil, fmt.Errorf("snapshots of two directories, %s and %s", ra.dir, rb.dir)
	}
	var out []change
	if err := s.diffTrees(ctx, ra.tree, rb.tree, "", false, false, &out); err != nil {
		return nil, err
	}
	// The files captured one by one: known on the side that named them.
	if len(ra.files)+len(rb.files) > 0 {
		ta, tb := newTreeReader(s, ra.tree), newTreeReader(s, rb.tree)
		byPath := map[string]int{}
		for i, c := range out {
			byPath[c.path] = i
		}
		paths := map[string]bool{}
		for _, x := range ra.files {
			paths[x.path] = true
		}
		for _, x := range rb.files {
			paths[x.path] = true
		}
		for p := range paths {
			ea, ua, err := ta.state(ra, p)
			if err != nil {
				return nil, err
			}
			eb, ub, err := tb.state(rb, p)
			if err != nil {
				return nil, err
			}
			c := change{path: p, before: ea, after: eb, beforeUnknown: ua, afterUnknown: ub}
			same := (ea == nil && eb == nil) || (ea != nil && eb != nil && ua == ub && ea.same(eb))
			if i, ok := byPath[p]; ok {
				if same {
					out[i].path = "" // dropped below
				} else {
					out[i] = c
				}
			} else if !same {
				out = append(out, c)
			}
		}
		out = slices.DeleteFunc(out, func(c change) bool { return c.path == "" })
		slices.SortFunc(out, func(a, b change) int { return comparePaths(a.path, b.path) })
	}
	// A path one side does not hold may have been ignored there.
	var ma, mb *matcher
	for i := range out {
		c := &out[i]
		if strings.HasPrefix(c.path, "/") {
			continue
		}
		if c.before == nil && !c.beforeUnknown {
			if ma == nil {
				var err error
				if ma, err = s.matcher(ra); err != nil {
					return nil, err
				}
			}
			c.beforeUnknown = ma.ignoredPath(c.path, c.after.isDir())
		}
		if c.after == nil && !c.afterUnknown {
			if mb == nil {
				var err error
				if mb, err = s.matcher(rb); err != nil {
					return nil, err
				}
			}
			c.afterUnknown = mb.ignoredPath(c.path, c.before.isDir())
		}
	}
	return out, nil
}

// diffTrees appends the differences between trees a and b, at prefix, to out. unknownA
// (unknownB) marks a side whose state under prefix is unknown (an unreadable directory).
func (s *Store) diffTrees(ctx context.Context, a, b sum, prefix string, unknownA, unknownB bool, out *[]change) error {
	if a == b {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ea, err := s.tree(a)
	if err != nil {
		return err
	}
	eb, err := s.tree(b)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var x, y *entry
		switch {
		case j >= len(eb) || (i < len(ea) && ea[i].name < eb[j].name):
			x = &ea[i]
			i++
		case i >= len(ea) || eb[j].name < ea[i].name:
			y = &eb[j]
			j++
		default:
			x, y = &ea[i], &eb[j]
			i, j = i+1, j+1
		}
		name := ""
		if x != nil {
			name = x.name
		} else {
			name = y.name
		}
		p := join(prefix, name)
		if x != nil && y != nil && x.same(y) {
			continue
		}
		// A directory on both sides is no change itself: what is in it says.
		if !x.isDir() || !y.isDir() {
			*out = append(*out, change{path: p, before: x, after: y, beforeUnknown: unknownA && x == nil, afterUnknown: unknownB && y == nil})
		}
		// What is under a directory that is on one side only, or both.
		ta, tb := emptyTree, emptyTree
		ua, ub := unknownA, unknownB
		if x != nil && x.kind == kDir {
			ta = x.hash
		}
		if y != nil && y.kind == kDir {
			tb = y.hash
		}
		if x != nil && x.kind == kOpaque {
			ua = true
		}
		if y != nil && y.kind == kOpaque {
			ub = true
		}
		if ta != emptyTree || tb != emptyTree {
			if err := s.diffTrees(ctx, ta, tb, p, ua, ub, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// treeReader finds paths in one tree, keeping the trees it read.
type treeReader struct {
	s     *Store
	root  sum
	trees map[sum][]entry
}

func newTreeReader(s *Store, root sum) *treeReader {
	return &treeReader{s: s, root: root, trees: map[sum][]entry{}}
}

// lookup returns the entry at relative path p, nil when there is none; opaque reports
// that p is under a directory that could not be read.
func (t *treeReader) lookup(p string) (e *entry, opaque bool, err error) {
	h := t.root
	for {
		ents, ok := t.trees[h]
		if !ok {
			if ents, err = t.s.tree(h); err != nil {
				return nil, false, err
			}
			t.trees[h] = ents
		}
		name, rest, more := strings.Cut(p, "/")
		i, found := slices.BinarySearchFunc(ents, name, func(a entry, n string) int { return strings.Compare(a.name, n) })
		if !found {
			return nil, false, nil
		}
		e := &ents[i]
		if !more {
			return e, false, nil
		}
		switch e.kind {
		case kDir:
			h, p = e.hash, rest
		case kOpaque:
			return nil, true, nil
		default:
			return nil, false, nil
		}
	}
}

// state returns what snapshot r (whose tree t reads) knows of path p: its entry (nil when
// absent) or that it is unknown.
func (t *treeReader) state(r *record, p string) (*entry, bool, error) {
	if i, ok := slices.BinarySearchFunc(r.files, p, func(x extra, p string) int { return strings.Compare(x.path, p) }); ok {
		if !r.files[i].present {
			return nil, false, nil
		}
		return &r.files[i].e, false, nil
	}
	if strings.HasPrefix(p, "/") {
		return nil, true, nil // outside the directory and not named: unknown
	}
	e, opaque, err := t.lookup(p)
	if err != nil || e != nil || opaque {
		return e, opaque, err
	}
	return nil, false, nil // ignored or absent: the caller asks the rules
}

// matcher returns the ignore rules that a snapshot's capture applied.
func (s *Store) matcher(r *record) (*matcher, error) {
	var extra *patternFile
	if len(r.exclude) > 0 {
		extra = parsePatterns([]byte(strings.Join(r.exclude, "\n")))
	}
	m := &matcher{layers: map[string]*patternFile{}}
	var above []abovePatterns
	for _, x := range r.rules {
		pf, err := s.patterns(x.blob, nil)
		if err != nil {
			return nil, err
		}
		if filepath.IsAbs(x.base) {
			above = append(above, abovePatterns{dir: x.base, pf: pf})
		} else {
			m.layers[x.base] = pf
		}
	}
	m.above = aboveRules(r.dir, extra, above)
	return m, nil
}
