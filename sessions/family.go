package sessions

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// familyRescan is the least time between two reads of the session directory for sessions
// another process created: this store's own creates are indexed at once.
const familyRescan = time.Second

// family indexes who is whose parent among a store's sessions, so that a snapshot's lineage
// and tree cost what the family holds, not what the store holds: a listing reads every
// file's metadata. A parent never changes, so an entry, once read, stays right; the index is
// built from a listing on first use, told of this store's creates, and read again from the
// directory when it changed (another process created a session), at most every
// familyRescan.
type family struct {
	mu      sync.Mutex          // guards the fields below
	parent  map[string]string   // session id -> its parent ("" for a root); nil until built
	kids    map[string][]string // parent -> children, oldest first
	dirMod  time.Time           // the directory's mtime at the last scan
	scanned time.Time           // when it was last scanned
}

// add records session id with parent; call with f.mu held.
func (f *family) add(id, parent string) {
	if _, ok := f.parent[id]; ok {
		return
	}
	f.parent[id] = parent
	if parent != "" {
		f.kids[parent] = append(f.kids[parent], id)
	}
}

// remove forgets session id; call with f.mu held.
func (f *family) remove(id string) {
	p, ok := f.parent[id]
	if !ok {
		return
	}
	delete(f.parent, id)
	if p != "" {
		f.kids[p] = slices.DeleteFunc(f.kids[p], func(k string) bool { return k == id })
		if len(f.kids[p]) == 0 {
			delete(f.kids, p)
		}
	}
}

// created tells the index of a session this store created.
func (s *Store) created(id, parent string) {
	f := &s.family
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.parent != nil {
		f.add(id, parent)
	}
}

// scanFamily brings the index up to date with the directory: on first use, and then when
// the directory changed, at most every familyRescan unless force. Only the metadata of
// sessions new to the index is read. Call it with f.mu held.
func (s *Store) scanFamily(ctx context.Context, force bool) error {
	f := &s.family
	now := time.Now()
	if f.parent != nil && !force && now.Sub(f.scanned) < familyRescan {
		return nil
	}
	st, err := os.Stat(s.dir)
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	if f.parent != nil && st.ModTime().Equal(f.dirMod) {
		f.scanned = now
		return nil
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	if f.parent == nil {
		f.parent, f.kids = map[string]string{}, map[string][]string{}
	}
	seen := make(map[string]bool, len(ents))
	type found struct {
		id, parent string
		created    time.Time
	}
	var fresh []found
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), fileExt)
		if !ok || e.IsDir() || !idPattern.MatchString(id) {
			continue
		}
		seen[id] = true
		if _, ok := f.parent[id]; ok {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		meta, _, err := s.readMeta(id)
		switch {
		case err == nil:
			fresh = append(fresh, found{id, meta.Parent, meta.Created})
		case errors.Is(err, fs.ErrNotExist):
		default:
			fresh = append(fresh, found{id: id}) // listed with its problem; no parent known
		}
	}
	slices.SortFunc(fresh, func(a, b found) int { return a.created.Compare(b.created) }) // children oldest first
	for _, n := range fresh {
		f.add(n.id, n.parent)
	}
	for id := range f.parent {
		if !seen[id] {
			f.remove(id)
		}
	}
	f.dirMod, f.scanned = st.ModTime(), now
	return nil
}

// parentOf returns the parent of session id ("" for a root), or [ErrNotFound].
func (s *Store) parentOf(ctx context.Context, id string) (string, error) {
	f := &s.family
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := s.scanFamily(ctx, false); err != nil {
		return "", err
	}
	if p, ok := f.parent[id]; ok {
		return p, nil
	}
	// Made since the last scan, by another process, or not there.
	if err := s.scanFamily(ctx, true); err != nil {
		return "", err
	}
	if p, ok := f.parent[id]; ok {
		return p, nil
	}
	return "", ErrNotFound
}

// childrenOf returns the ids of session id's children, oldest first.
func (s *Store) childrenOf(ctx context.Context, id string) ([]string, error) {
	f := &s.family
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := s.scanFamily(ctx, false); err != nil {
		return nil, err
	}
	return slices.Clone(f.kids[id]), nil
}
