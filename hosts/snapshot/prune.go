package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"myco.dev/internal/atomicfile"
)

// PruneResult says what a prune did.
type PruneResult struct {
	// Dropped counts the owner's snapshots it no longer keeps.
	Dropped int `json:"dropped"`
	// Freed is the space given back, in bytes.
	Freed int64 `json:"freed"`
}

// Prune makes owner keep only the snapshots in keep (nil: none, for a session deleted),
// then removes from the store what no owner's snapshot needs: the packs whose objects all
// went, and the live objects of packs half dead (or small) copied into one new pack first.
// The stat caches of directories whose last snapshot went are dropped too.
//
// The owner's list is rewritten in any case; the removal needs the store alone, and when
// another process has it open Prune returns [ErrBusy] after the rewrite (the next prune
// removes what this one could not). Captures, diffs and restores of this process wait
// while a prune runs.
func (s *Store) Prune(ctx context.Context, owner string, keep []ID) (PruneResult, error) {
	s.gc.Lock()
	defer s.gc.Unlock()
	var res PruneResult
	dropped, err := s.setRefs(owner, keep)
	if err != nil {
		return res, err
	}
	res.Dropped = dropped
	if err := flock(s.lock, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		// a failed upgrade may have let the shared lock go: take it again
		if lerr := flock(s.lock, syscall.LOCK_SH); lerr != nil {
			return res, fmt.Errorf("prune the snapshot store: lock: %w", lerr)
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return res, ErrBusy
		}
		return res, fmt.Errorf("prune the snapshot store: lock: %w", err)
	}
	defer flock(s.lock, syscall.LOCK_SH)
	before, err := s.size()
	if err != nil {
		return res, err
	}
	if err := s.collect(ctx); err != nil {
		return res, fmt.Errorf("prune the snapshot store: %w", err)
	}
	after, err := s.size()
	if err != nil {
		return res, err
	}
	res.Freed = before - after
	return res, nil
}

// setRefs rewrites owner's list of snapshots to keep, and returns how many it dropped.
func (s *Store) setRefs(owner string, keep []ID) (int, error) {
	path := filepath.Join(s.sub("refs"), ownerKey(owner))
	_, had, err := readRefFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	var ids []ID
	for _, id := range keep {
		if _, ok := parseSum(string(id)); ok && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	dropped := 0
	seen := map[ID]bool{}
	for _, id := range had {
		if !seen[id] && !slices.Contains(ids, id) {
			dropped++
		}
		seen[id] = true
	}
	s.refMu.Lock()
	defer s.refMu.Unlock()
	delete(s.last, owner)
	if len(ids) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("prune the snapshots of %s: %w", owner, err)
		}
		return dropped, nil
	}
	var b strings.Builder
	b.WriteString("owner " + quoteOwner(owner) + "\n")
	for _, id := range ids {
		b.WriteString(string(id) + "\n")
	}
	if err := atomicfile.Write(path, []byte(b.String()), 0o600); err != nil {
		return 0, fmt.Errorf("prune the snapshots of %s: %w", owner, err)
	}
	s.last[owner] = ids[len(ids)-1]
	return dropped, nil
}

// collect removes what no owner keeps. The store must be held alone.
func (s *Store) collect(ctx context.Context) error {
	refs, err := s.readRefs()
	if err != nil {
		return err
	}
	s.mu.Lock()
	if err := s.loadPacks(); err != nil { // another process's packs, added since
		s.mu.Unlock()
		return err
	}
	s.mu.Unlock()
	live := map[sum]bool{}
	liveSnaps := map[ID]bool{}
	for _, ids := range refs {
		for _, id := range ids {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.mark(live, id); err != nil {
				return err
			}
			liveSnaps[id] = true
		}
	}

	// What each pack holds that is live.
	type usage struct{ live, dead int64 }
	s.mu.Lock()
	use := map[*pack]*usage{}
	for _, p := range s.packs {
		use[p] = &usage{}
	}
	for h, l := range s.index {
		if live[h] {
			use[l.p].live += int64(l.stored)
		} else {
			use[l.p].dead += int64(l.stored)
		}
	}
	packs := make([]*pack, 0, len(s.packs))
	for _, p := range s.packs {
		packs = append(packs, p)
	}
	index := s.index
	s.mu.Unlock()
	slices.SortFunc(packs, func(a, b *pack) int { return strings.Compare(a.name, b.name) })
	small := 0
	for _, p := range packs {
		if u := use[p]; u.live > 0 && p.size < smallPack {
			small++
		}
	}
	var drop []*pack
	rewrite := map[*pack]bool{}
	for _, p := range packs {
		u := use[p]
		switch {
		case u.live == 0:
			drop = append(drop, p)
		case u.dead >= u.live || (p.size < smallPack && small > 1):
			drop = append(drop, p)
			rewrite[p] = true
		}
	}
	if len(drop) == 0 {
		return s.dropCaches(liveSnaps)
	}
	// Copy the live objects of the packs rewritten into one new pack.
	w := newPackWriter(s.sub("packs"))
	defer w.abort()
	hs := make([]sum, 0)
	for h, l := range index {
		if live[h] && rewrite[l.p] {
			hs = append(hs, h)
		}
	}
	slices.SortFunc(hs, func(a, b sum) int {
		la, lb := index[a], index[b]
		if c := strings.Compare(la.p.name, lb.p.name); c != 0 {
			return c
		}
		return int(la.off - lb.off)
	})
	for _, h := range hs {
		l := index[h]
		f, err := l.p.file()
		if err != nil {
			return err
		}
		stored := make([]byte, l.stored)
		if _, err := f.ReadAt(stored, l.off); err != nil {
			return fmt.Errorf("copy object %s from %s: %w", h, l.p.name, err)
		}
		if err := w.addStored(l.typ, h, l.flags, stored, l.raw); err != nil {
			return err
		}
	}
	if err := s.commit(w); err != nil {
		return err
	}
	s.mu.Lock()
	for _, p := range drop {
		p.close()
		delete(s.packs, p.name)
	}
	s.index, s.trees, s.ntrees = map[sum]loc{}, map[sum][]entry{}, 0
	for _, p := range s.packs {
		p.close()
	}
	s.packs = map[string]*pack{}
	s.mu.Unlock()
	for _, p := range drop {
		if err := os.Remove(p.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := syncDir(s.sub("packs")); err != nil {
		return err
	}
	s.mu.Lock()
	err = s.loadPacks()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.dropCaches(liveSnaps)
}

// smallPack is the size under which packs are copied together when two or more are.
const smallPack = 1 << 20

// mark adds the objects snapshot id needs to live. A snapshot the store does not hold
// (lost, or an owner's list naming another store's) marks nothing.
func (s *Store) mark(live map[sum]bool, id ID) error {
	h, err := id.sum()
	if err != nil || live[h] {
		return nil
	}
	r, err := s.record(id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	live[h] = true
	for _, x := range r.rules {
		live[x.blob] = true
	}
	for _, x := range r.files {
		if x.present && x.e.kind == kFile {
			live[x.e.hash] = true
		}
	}
	return s.markTree(live, r.tree)
}

func (s *Store) markTree(live map[sum]bool, h sum) error {
	if live[h] {
		return nil
	}
	live[h] = true
	ents, err := s.tree(h)
	if err != nil {
		return err
	}
	for i := range ents {
		switch e := &ents[i]; e.kind {
		case kFile:
			live[e.hash] = true
		case kDir:
			if err := s.markTree(live, e.hash); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropCaches removes the stat caches whose snapshot is not live, and the temporary files
// a crash left (no other process has the store open).
func (s *Store) dropCaches(live map[ID]bool) error {
	s.mu.Lock()
	for dir, c := range s.caches {
		if !live[c.id] {
			delete(s.caches, dir)
		}
	}
	s.mu.Unlock()
	ents, err := os.ReadDir(s.sub("cache"))
	if err != nil {
		return err
	}
	for _, e := range ents {
		path := filepath.Join(s.sub("cache"), e.Name())
		if strings.HasPrefix(e.Name(), ".tmp-") {
			os.Remove(path)
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if id, ok := cacheID(b); !ok || !live[id] {
			os.Remove(path)
		}
	}
	pents, err := os.ReadDir(s.sub("packs"))
	if err != nil {
		return err
	}
	for _, e := range pents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			os.Remove(filepath.Join(s.sub("packs"), e.Name()))
		}
	}
	return nil
}

// cacheID reads the snapshot id a cache file describes.
func cacheID(b []byte) (ID, bool) {
	if len(b) < len(cacheMagic) || string(b[:len(cacheMagic)]) != cacheMagic {
		return "", false
	}
	d := decoder{b: b[len(cacheMagic):]}
	d.str()
	id := ID(d.str())
	return id, d.err == nil
}

// Size returns the space the store takes on disk, in bytes: its packs, lists and caches.
func (s *Store) Size() (int64, error) {
	s.gc.RLock()
	defer s.gc.RUnlock()
	return s.size()
}

func (s *Store) size() (int64, error) {
	var total int64
	for _, sub := range []string{"packs", "refs", "cache"} {
		ents, err := os.ReadDir(s.sub(sub))
		if err != nil {
			return 0, fmt.Errorf("size of the snapshot store: %w", err)
		}
		for _, e := range ents {
			if info, err := e.Info(); err == nil {
				total += info.Size()
			}
		}
	}
	return total, nil
}
