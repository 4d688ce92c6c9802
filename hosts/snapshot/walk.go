package snapshot

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// walker is one capture's walk.
type walker struct {
	s           *Store
	ctx         context.Context
	pw          *packWriter
	max         int64
	start       int64 // ns: a file whose ctime is after this is hashed again next time
	old         *rootCache
	noGitignore bool
	sem         chan struct{} // bounds the goroutines reading directories
	read        atomic.Int64  // files read
	maxFiles    int64         // bound of listed, 0 for none
	listed      atomic.Int64  // entries listed
	deadline    time.Time     // when the walk gives up (ErrTooLarge); zero for never
	slow        atomic.Bool   // it gave up for the deadline
	plan        *watchPlan    // the directory's watch; nil when there is none
	rootDev     uint64        // the directory's device
	dirsListed  atomic.Int64  // directories listed

	mu               sync.Mutex // guards the fields below
	dirs             map[string]*dirCache
	rules            []rule
	count, notStored int
	bytes            int64
	changed          bool            // the cache differs from the old one
	reused           map[string]bool // directories taken from the old cache unlisted
	always           map[string]bool // directories the watch cannot stand for
	saved            *rootCache      // the cache this capture leaves; nil until it succeeds
}

type dirResult struct {
	tree   sum
	opaque bool
	err    error
}

// dir captures the directory r, at rel, under the rules rs; fresh when no subdirectory
// may be taken from the old cache (the rules above it changed).
func (w *walker) dir(r *os.Root, rel string, rs *rules, fresh bool) (dirResult, error) {
	if err := w.ctx.Err(); err != nil {
		return dirResult{}, err
	}
	f, err := r.Open(".")
	if err != nil {
		return dirResult{opaque: true}, err
	}
	if w.plan != nil && !w.plan.watchDir(rel, f, w.rootDev) {
		w.listEveryTime(rel)
	}
	w.dirsListed.Add(1)
	infos, err := f.Readdir(-1)
	f.Close()
	if err != nil {
		return dirResult{opaque: true}, err
	}
	if n := w.listed.Add(int64(len(infos))); w.maxFiles > 0 && n > w.maxFiles {
		return dirResult{}, ErrTooLarge
	}
	if !w.deadline.IsZero() && time.Now().After(w.deadline) {
		w.slow.Store(true)
		return dirResult{}, ErrTooLarge
	}
	slices.SortFunc(infos, func(a, b fs.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	var old []cacheEnt
	var oldDir *dirCache
	if w.old.dirs != nil {
		if oldDir = w.old.dirs[rel]; oldDir != nil {
			old = oldDir.ents
		}
	}
	var gi *cacheEnt // the .gitignore, read first: its rules apply to the others
	if !w.noGitignore {
		if i, ok := slices.BinarySearchFunc(infos, ".gitignore", func(a fs.FileInfo, n string) int { return strings.Compare(a.Name(), n) }); ok && infos[i].Mode().IsRegular() {
			pf, x, err := w.gitignore(r, rel, infos[i], old)
			if err != nil {
				return dirResult{}, err
			}
			rs, gi = rs.with(rel, pf), &x
		}
		if was := findEnt(old, ".gitignore"); (was == nil) != (gi == nil) || (gi != nil && !was.same(&gi.entry)) {
			fresh = true // other rules below
		}
	}
	ents := make([]cacheEnt, 0, len(infos))
	type subdir struct {
		at   int // in ents
		info fs.FileInfo
		res  dirResult
	}
	var subs []subdir
	j := 0 // the next old entry
	same := oldDir != nil
	var count, notStored int
	var bytes int64
	for _, info := range infos {
		name := info.Name()
		if isGitName(name) {
			continue
		}
		mode := info.Mode()
		isDir := mode.IsDir()
		p := join(rel, name)
		if rs != nil && rs.ignored(p, isDir) {
			continue
		}
		for j < len(old) && old[j].name < name {
			j++
		}
		var prev *cacheEnt
		if j < len(old) && old[j].name == name {
			prev = &old[j]
		}
		switch {
		case isDir:
			dev, ino, _, _ := statOf(info)
			if dc := w.reusable(p, info, prev); !fresh && dc != nil && w.reuse(p, dc) {
				ents = append(ents, cacheEnt{entry: entry{name: name, kind: kDir, hash: dc.tree}, dev: dev, ino: ino})
				continue
			}
			subs = append(subs, subdir{at: len(ents), info: info})
			ents = append(ents, cacheEnt{entry: entry{name: name, kind: kDir}, dev: dev, ino: ino})
			continue
		case mode.IsRegular():
			var x cacheEnt
			var err error
			if gi != nil && name == ".gitignore" {
				x = *gi
			} else if x, err = w.file(r, name, info, prev); err != nil {
				return dirResult{}, err
			}
			ents = append(ents, x)
			count++
			bytes += x.size
			if x.kind == kBig {
				notStored++
			}
			if w.plan != nil && nlinkOf(info) > 1 {
				w.listEveryTime(rel) // a write through another link is not reported here
			}
		case mode&fs.ModeSymlink != 0:
			x, err := w.link(r, name, info, prev)
			if err != nil {
				return dirResult{}, err
			}
			ents = append(ents, x)
			count++
		default:
			continue // a named pipe, a socket, a device
		}
		if x := &ents[len(ents)-1]; prev == nil || x.racy || prev.racy || !x.sameStat(prev) {
			same = false
		}
	}
	// The subdirectories, in parallel while there are free slots.
	var wg sync.WaitGroup
	for i := range subs {
		sd := &subs[i]
		run := func() {
			sub, err := r.OpenRoot(sd.info.Name())
			if err == nil {
				var now fs.FileInfo
				if now, err = sub.Stat("."); err == nil && !os.SameFile(now, sd.info) {
					err = errors.New("replaced while read")
				}
				if err != nil {
					sub.Close()
				}
			}
			if err != nil {
				sd.res = dirResult{opaque: true}
				return
			}
			defer sub.Close()
			sd.res, sd.res.err = w.dir(sub, join(rel, sd.info.Name()), rs, fresh)
			if sd.res.err != nil && !sd.res.opaque {
				return
			}
			sd.res.err = nil
		}
		select {
		case w.sem <- struct{}{}:
			wg.Go(func() {
				defer func() { <-w.sem }()
				run()
			})
		default:
			run()
		}
	}
	wg.Wait()
	for i := range subs {
		sd := &subs[i]
		if sd.res.err != nil {
			return dirResult{}, sd.res.err
		}
		x := &ents[sd.at]
		if sd.res.opaque {
			x.kind = kOpaque
		} else {
			x.hash = sd.res.tree
		}
	}
	// The tree: the old one when every entry is the same.
	if same && len(ents) != len(old) {
		same = false
	}
	treeSame := oldDir != nil && len(ents) == len(old)
	for i := 0; treeSame && i < len(ents); i++ {
		treeSame = ents[i].name == old[i].name && ents[i].same(&old[i].entry)
	}
	dc := oldDir
	if !treeSame || !same {
		dc = &dirCache{ents: ents}
		if treeSame {
			dc.tree = oldDir.tree
		} else {
			tree := make([]entry, len(ents))
			for i := range ents {
				tree[i] = ents[i].entry
			}
			raw := encodeTree(tree)
			dc.tree = sha256.Sum256(raw)
			if !w.s.has(dc.tree) {
				if err := w.pw.add(objTree, dc.tree, raw); err != nil {
					return dirResult{}, err
				}
			}
		}
	}
	w.mu.Lock()
	w.dirs[rel] = dc
	w.count += count
	w.bytes += bytes
	w.notStored += notStored
	if dc != oldDir {
		w.changed = true
	}
	w.mu.Unlock()
	return dirResult{tree: dc.tree}, nil
}

// findEnt returns the entry named name of the sorted ents, or nil.
func findEnt(ents []cacheEnt, name string) *cacheEnt {
	if i, ok := slices.BinarySearchFunc(ents, name, func(a cacheEnt, n string) int { return strings.Compare(a.name, n) }); ok {
		return &ents[i]
	}
	return nil
}

func (x *cacheEnt) sameStat(o *cacheEnt) bool {
	return x.dev == o.dev && x.ino == o.ino && x.mtimeNs == o.mtimeNs && x.ctimeNs == o.ctimeNs &&
		x.statSize == o.statSize && x.entry.same(&o.entry)
}

// file records the regular file name of r; prev is what the last capture saw of it.
func (w *walker) file(r *os.Root, name string, info fs.FileInfo, prev *cacheEnt) (cacheEnt, error) {
	x, _, err := w.fileData(r, name, info, prev)
	return x, err
}

// fileData is [walker.file], which also returns the content when it read it.
func (w *walker) fileData(r *os.Root, name string, info fs.FileInfo, prev *cacheEnt) (cacheEnt, []byte, error) {
	dev, ino, mtime, ctime := statOf(info)
	x := cacheEnt{entry: entry{name: name, perm: uint32(info.Mode().Perm()), size: info.Size()},
		dev: dev, ino: ino, mtimeNs: mtime, ctimeNs: ctime, statSize: info.Size()}
	if prev != nil && !prev.racy && prev.dev == dev && prev.ino == ino && prev.mtimeNs == mtime &&
		prev.ctimeNs == ctime && prev.statSize == x.statSize && prev.perm == x.perm &&
		((prev.kind == kFile && x.size <= w.max) || (prev.kind == kBig && x.size > w.max)) {
		x.entry = prev.entry
		return x, nil, nil
	}
	x.racy = ctime >= w.start
	if x.size > w.max {
		x.kind, x.mtime = kBig, mtime
		return x, nil, nil
	}
	w.read.Add(1)
	data, err := readRegular(r, name, info, w.max)
	switch {
	case errors.Is(err, errTooBig):
		x.kind, x.mtime = kBig, mtime
		return x, nil, nil
	case err != nil:
		// unreadable (a permission, or a file replaced while read): recorded, not stored
		x.kind, x.mtime, x.racy = kBig, mtime, true
		return x, nil, nil
	}
	x.kind, x.size = kFile, int64(len(data))
	x.hash = sha256.Sum256(data)
	if !w.s.has(x.hash) {
		if err := w.pw.add(objBlob, x.hash, data); err != nil {
			return cacheEnt{}, nil, err
		}
	}
	return x, data, nil
}

var errTooBig = errors.New("snapshot: over the size cap")

// readRegular reads the regular file name of r, which info (its lstat) describes: it opens
// without blocking and checks that what it opened is that file, not a symlink, a FIFO or
// another file swapped in since.
func readRegular(r *os.Root, name string, info fs.FileInfo, limit int64) ([]byte, error) {
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	now, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !now.Mode().IsRegular() || (info != nil && !os.SameFile(now, info)) {
		return nil, errors.New("replaced while read")
	}
	if now.Size() > limit {
		return nil, errTooBig
	}
	data := make([]byte, 0, now.Size()+1)
	data, err = readAllInto(f, data, limit)
	if err != nil {
		return nil, err
	}
	return data, nil
}

func readAllInto(f io.Reader, data []byte, limit int64) ([]byte, error) {
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if int64(len(data)) > limit {
			return nil, errTooBig
		}
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// link records the symlink name of r.
func (w *walker) link(r *os.Root, name string, info fs.FileInfo, prev *cacheEnt) (cacheEnt, error) {
	dev, ino, mtime, ctime := statOf(info)
	x := cacheEnt{entry: entry{name: name, kind: kLink}, dev: dev, ino: ino, mtimeNs: mtime, ctimeNs: ctime, statSize: info.Size()}
	if prev != nil && !prev.racy && prev.kind == kLink && prev.dev == dev && prev.ino == ino &&
		prev.mtimeNs == mtime && prev.ctimeNs == ctime && prev.statSize == x.statSize {
		x.entry = prev.entry
		return x, nil
	}
	x.racy = ctime >= w.start
	target, err := r.Readlink(name)
	if err != nil {
		x.racy = true
		return x, nil // gone since the listing: an empty target, read again next time
	}
	x.target = target
	return x, nil
}

// gitignore reads and parses the .gitignore of directory r (at rel), records it as a rule
// of the snapshot, and returns it as a file of the directory too.
func (w *walker) gitignore(r *os.Root, rel string, info fs.FileInfo, old []cacheEnt) (*patternFile, cacheEnt, error) {
	x, data, err := w.fileData(r, ".gitignore", info, findEnt(old, ".gitignore"))
	if err != nil || x.kind != kFile {
		return nil, x, err // too big or unreadable: no rules from it
	}
	pf, err := w.s.patterns(x.hash, data) // data is nil when the stat cache knew the file
	if err != nil {
		return nil, x, err
	}
	w.mu.Lock()
	w.rules = append(w.rules, rule{base: rel, blob: x.hash})
	w.mu.Unlock()
	return pf, x, nil
}
