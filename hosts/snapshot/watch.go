package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The watch: each directory a capture lists is watched (inotify on Linux) before it is
// listed, so that a later capture with [CaptureRequest.Watch] lists again only the
// directories something happened in since, and takes the others' trees from the stat
// cache without a system call. An unchanged tree then costs reading the queued events.
//
// A directory is listed at every capture all the same when it could not be watched (a
// network or FUSE file system, the store's bound of watches reached) or holds a file with
// other hard links (a write through a link outside the tree is not reported here). Lost
// events (the kernel's queue overflowed), other options, other .gitignore rules above the
// directory, a .gitignore changed inside it (for the directories below it) or a failed
// capture make the next capture walk in full. The kernel does not report writes through a
// shared mapping (mmap); a capture without Watch sees them, which is why the service asks
// for one at the start of every turn.

// notifier is the system's change notification: watches on directories, whose events
// queue until drained.
type notifier interface {
	add(f *os.File) (int32, error)
	remove(wd int32)
	drain(fn func(event)) error
	close()
}

// event is one notification: something changed in (or to) the directory watched as wd.
type event struct {
	wd       int32
	overflow bool // events were lost; wd means nothing
	self     bool // the directory itself was moved or removed
	gone     bool // the watch is no more
}

// watchSet holds the store's watches: one notifier, and the state of each directory
// captured.
type watchSet struct {
	mu    sync.Mutex // guards the fields below and those of every dirWatch it holds
	tried bool
	n     notifier // nil when the system has none
	max   int      // kernel watches the store may hold
	gen   uint64   // bumped when events were lost
	wds   map[int32][]wref
	roots map[string]*dirWatch
	fsOK  map[uint64]bool // by device: on a file system whose changes are reported
}

// wref is a watched directory: rel in dw's tree.
type wref struct {
	dw  *dirWatch
	rel string
}

type watched struct {
	wd       int32
	dev, ino uint64
}

// dirWatch is the watch of one captured directory.
type dirWatch struct {
	capture sync.Mutex // held for the whole of a capture of the directory

	// Guarded by watchSet.mu.
	cache  *rootCache // the capture the watches stand for; nil when none may be trusted
	key    string     // its options
	gen    uint64     // the set's gen when it started
	rules  []rule     // the .gitignore rules inside its tree
	byRel  map[string]watched
	byWd   map[int32]string
	dirty  map[string]bool // directories with events since the last capture started
	always map[string]bool // directories listed at every capture
	used   time.Time       // when its last capture ended
}

// watchIdle is how long a directory goes uncaptured before its watches may be released
// for another's, when the store's bound is reached.
const watchIdle = 10 * time.Minute

// root returns dir's watch, or nil when the system reports no changes.
func (ws *watchSet) root(dir string) *dirWatch {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if !ws.tried {
		ws.tried = true
		if n, err := newNotifier(); err == nil {
			ws.n, ws.max = n, maxWatches()
			ws.wds, ws.roots, ws.fsOK = map[int32][]wref{}, map[string]*dirWatch{}, map[uint64]bool{}
		}
	}
	if ws.n == nil {
		return nil
	}
	dw := ws.roots[dir]
	if dw == nil {
		dw = &dirWatch{byRel: map[string]watched{}, byWd: map[int32]string{}, dirty: map[string]bool{}}
		ws.roots[dir] = dw
	}
	return dw
}

func (ws *watchSet) close() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.n != nil {
		ws.n.close()
		ws.n, ws.wds, ws.roots = nil, nil, nil
	}
}

// watchPlan is what one capture may trust of its directory's watch.
type watchPlan struct {
	ws      *watchSet
	dw      *dirWatch
	trust   bool               // a directory neither listed nor under one listed may be taken from the cache
	visit   map[string]bool    // the directories to list: with events, never trusted, and their parents
	byRel   map[string]watched // the watches when the capture started
	rules   []rule             // the tree's rules of the last capture
	gen     uint64
	claimed map[int32]string // the watches of the directories listed so far, by name
	key     string
}

// plan reads the events queued, and returns what the capture of dw may trust: nothing
// unless want, and the last capture of the directory (old) was made with the same
// options (key) and no event was lost since.
func (ws *watchSet) plan(dw *dirWatch, want bool, key string, old *rootCache) *watchPlan {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.drain()
	p := &watchPlan{ws: ws, dw: dw, gen: ws.gen, key: key, byRel: make(map[string]watched, len(dw.byRel)), claimed: map[int32]string{}}
	for rel, wt := range dw.byRel {
		p.byRel[rel] = wt
	}
	p.trust = want && ws.n != nil && dw.cache != nil && dw.cache == old && dw.key == key && dw.gen == ws.gen
	if p.trust {
		p.rules = dw.rules
		p.visit = map[string]bool{}
		for _, set := range []map[string]bool{dw.dirty, dw.always} {
			for rel := range set {
				for ; !p.visit[rel]; rel = parent(rel) {
					p.visit[rel] = true
					if rel == "" {
						break
					}
				}
			}
		}
	}
	clear(dw.dirty)
	return p
}

// drain reads the queued events into the directories' dirty marks. ws.mu is held.
func (ws *watchSet) drain() {
	if ws.n == nil {
		return
	}
	err := ws.n.drain(ws.dispatch)
	if err != nil {
		ws.gen++ // what was lost is unknown
	}
}

// dispatch marks what ev says changed. ws.mu is held.
func (ws *watchSet) dispatch(ev event) {
	if ev.overflow {
		ws.gen++
		return
	}
	refs := ws.wds[ev.wd]
	for _, r := range refs {
		r.dw.dirty[r.rel] = true
		if ev.self && r.rel != "" {
			r.dw.dirty[parent(r.rel)] = true
		}
		if ev.gone && r.dw.byRel[r.rel].wd == ev.wd {
			delete(r.dw.byRel, r.rel)
			delete(r.dw.byWd, ev.wd)
		}
	}
	if ev.gone {
		delete(ws.wds, ev.wd)
	}
}

// watchDir watches the directory f, at rel, before the capture lists it; false when it is
// not watched (then it is listed at every capture).
func (p *watchPlan) watchDir(rel string, f *os.File, rootDev uint64) bool {
	info, err := f.Stat()
	if err != nil {
		return false
	}
	dev, ino, _, _ := statOf(info)
	ws, dw := p.ws, p.dw
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.n == nil {
		return false
	}
	if wt, ok := p.byRel[rel]; ok && wt.dev == dev && wt.ino == ino && dw.byRel[rel] == wt {
		return p.claim(wt.wd, rel) // watched since before the last capture, and still
	}
	if rel == "" || dev != rootDev {
		ok, known := ws.fsOK[dev]
		if !known {
			ok = watchable(f)
			ws.fsOK[dev] = ok
		}
		if !ok {
			return false
		}
	}
	if _, ok := dw.byRel[rel]; !ok && len(ws.wds) >= ws.max && !ws.release(dw) {
		return false
	}
	wd, err := ws.n.add(f)
	if errors.Is(err, syscall.ENOSPC) && ws.release(dw) {
		wd, err = ws.n.add(f)
	}
	if err != nil || !p.claim(wd, rel) {
		return false
	}
	if other, ok := dw.byWd[wd]; ok && other != rel {
		// Moved here since the last capture: the watch follows it.
		if dw.byRel[other].wd == wd {
			delete(dw.byRel, other)
		}
		for i, r := range ws.wds[wd] {
			if r.dw == dw && r.rel == other {
				ws.wds[wd][i].rel = rel
			}
		}
	}
	if old, ok := dw.byRel[rel]; ok && old.wd != wd {
		ws.unref(dw, rel, old.wd)
	}
	dw.byRel[rel] = watched{wd: wd, dev: dev, ino: ino}
	dw.byWd[wd] = rel
	if !slices.Contains(ws.wds[wd], wref{dw, rel}) {
		ws.wds[wd] = append(ws.wds[wd], wref{dw, rel})
	}
	return true
}

// claim takes the watch wd for rel in this capture: false when another name of the tree
// took it (one directory mounted at two names), whose events then stand for that name
// only. ws.mu is held.
func (p *watchPlan) claim(wd int32, rel string) bool {
	if other, ok := p.claimed[wd]; ok && other != rel {
		return false
	}
	p.claimed[wd] = rel
	return true
}

// unref forgets that rel of dw is watched as wd, and removes the kernel's watch once no
// directory uses it. ws.mu is held.
func (ws *watchSet) unref(dw *dirWatch, rel string, wd int32) {
	if dw.byRel[rel].wd == wd {
		delete(dw.byRel, rel)
	}
	if dw.byWd[wd] == rel {
		delete(dw.byWd, wd)
	}
	refs := slices.DeleteFunc(ws.wds[wd], func(r wref) bool { return r.dw == dw && r.rel == rel })
	if len(refs) > 0 {
		ws.wds[wd] = refs
		return
	}
	delete(ws.wds, wd)
	ws.n.remove(wd)
}

// release frees the watches of the other directories idle for watchIdle (and not being
// captured), for dw's; false when that leaves no room. ws.mu is held.
func (ws *watchSet) release(dw *dirWatch) bool {
	freed := false
	for _, o := range ws.roots {
		if o == dw || len(o.byRel) == 0 || time.Since(o.used) < watchIdle || !o.capture.TryLock() {
			continue
		}
		for rel, wt := range o.byRel {
			ws.unref(o, rel, wt.wd)
		}
		o.cache = nil
		o.capture.Unlock()
		freed = true
	}
	return freed && len(ws.wds) < ws.max
}

// finish records the capture's outcome: the cache the watches now stand for (nil after a
// failure: the next capture walks in full), the tree's rules, and the directories listed
// at every capture. The watches of directories no longer in the tree are removed.
func (p *watchPlan) finish(c *rootCache, rules []rule, always map[string]bool) {
	ws, dw := p.ws, p.dw
	ws.mu.Lock()
	defer ws.mu.Unlock()
	dw.used = time.Now()
	if ws.n == nil {
		return
	}
	if c == nil {
		dw.cache = nil
		return
	}
	for rel, wt := range dw.byRel {
		if c.dirs[rel] == nil {
			ws.unref(dw, rel, wt.wd)
		}
	}
	dw.cache, dw.key, dw.gen, dw.rules, dw.always = c, p.key, p.gen, rules, always
}

// watchKey is what a capture's trees depend on besides the files: a capture with other
// options, or under other rules above the directory, cannot take a tree from the last.
func watchKey(r CaptureRequest, maxSize int64, above []rule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%t %d %d %q", r.NoGitignore, maxSize, r.MaxFiles, r.Exclude)
	for _, ru := range above {
		fmt.Fprintf(&b, " %q=%s", ru.base, ru.blob)
	}
	return b.String()
}

// reusable returns the cache of the subdirectory p (listed as info, recorded as prev
// by the last capture) when the plan trusts it: watched since before the last capture,
// nothing happened in or under it, and it is the same directory.
func (w *walker) reusable(p string, info fs.FileInfo, prev *cacheEnt) *dirCache {
	pl := w.plan
	if pl == nil || !pl.trust || pl.visit[p] || prev == nil || prev.kind != kDir {
		return nil
	}
	dc := w.old.dirs[p]
	wt, ok := pl.byRel[p]
	if dc == nil || !ok {
		return nil
	}
	dev, ino, _, _ := statOf(info)
	if wt.dev != dev || wt.ino != ino || prev.dev != dev || prev.ino != ino || dc.tree != prev.hash {
		return nil
	}
	return dc
}

// reuse takes the subtree at p from the last capture, as the capture's own: false when
// the cache lacks one of its directories (then it is walked).
func (w *walker) reuse(p string, dc *dirCache) bool {
	type sub struct {
		rel string
		dc  *dirCache
	}
	subs := []sub{{p, dc}}
	for i := 0; i < len(subs); i++ {
		for j := range subs[i].dc.ents {
			x := &subs[i].dc.ents[j]
			if x.kind != kDir {
				continue
			}
			rel := join(subs[i].rel, x.name)
			c := w.old.dirs[rel]
			if c == nil || c.tree != x.hash {
				return false
			}
			subs = append(subs, sub{rel, c})
		}
	}
	var count, notStored int
	var bytes int64
	for _, s := range subs {
		for j := range s.dc.ents {
			switch x := &s.dc.ents[j]; x.kind {
			case kFile, kBig:
				count++
				bytes += x.size
				if x.kind == kBig {
					notStored++
				}
			case kLink:
				count++
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range subs {
		w.dirs[s.rel] = s.dc
		w.reused[s.rel] = true
	}
	w.count += count
	w.bytes += bytes
	w.notStored += notStored
	return true
}

// treeRules returns the .gitignore rules of the tree captured: those read by the walk,
// and the last capture's in the directories taken from it.
func (w *walker) treeRules() []rule {
	rules := slices.Clone(w.rules)
	if w.plan != nil {
		for _, ru := range w.plan.rules {
			if w.reused[ru.base] {
				rules = append(rules, ru)
			}
		}
	}
	return rules
}

// listEveryTime marks the directory rel as one the watch cannot stand for.
func (w *walker) listEveryTime(rel string) {
	w.mu.Lock()
	w.always[rel] = true
	w.mu.Unlock()
}
