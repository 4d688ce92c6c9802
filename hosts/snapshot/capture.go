package snapshot

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Request asks for a capture of a directory.
type Request struct {
	// Owner keeps the snapshot (a session's id): it stays in the store until the owner's
	// Prune leaves it out.
	Owner string
	// Dir is the directory captured, absolute: the session's directory.
	Dir string
	// Files are absolute paths captured one by one, present or absent: a file the editor
	// wrote outside Dir, or one inside it that the .gitignore files leave out. A path in a
	// .git directory is left out.
	Files []string
	// Exclude holds more patterns in .gitignore syntax, relative to Dir, which the
	// .gitignore files override (as git's info/exclude).
	Exclude []string
	// NoGitignore captures the files the .gitignore files leave out too (never .git).
	NoGitignore bool
}

// Snapshot describes a capture.
type Snapshot struct {
	ID  ID     `json:"id"`
	Dir string `json:"dir"`
	// Files counts the files and symlinks recorded, Bytes their sizes, NotStored those
	// whose content was not kept (over the size cap, or unreadable).
	Files     int   `json:"files"`
	Bytes     int64 `json:"bytes"`
	NotStored int   `json:"not_stored"`
	// Read counts the files this capture read (those whose stat changed since the last
	// capture of the directory), and Added what it added to the store, in bytes: 0 when
	// nothing changed.
	Read  int   `json:"read"`
	Added int64 `json:"added"`
}

// Capture records the state of r.Dir (and r.Files) and returns its snapshot, which r.Owner
// keeps. Directories are read in parallel; a file whose stat (device, inode, size, mtime,
// ctime) matches the last capture of the directory is not read again, so an unchanged tree
// costs a walk and a stat per file, and writes nothing.
//
// What is recorded: regular files (their permission bits, and their content up to
// [Options.MaxFileSize]; a larger file by its size and mtime only), symlinks (their target,
// never followed) and directories (empty ones included). Named pipes, sockets and devices
// are left out, and so are .git and, unless r.NoGitignore, what the project's .gitignore
// files (those of Dir, of its subdirectories and of its parents up to the repository's top)
// ignore. A directory that cannot be read is recorded as such: what is inside it is
// unknown, not absent.
func (s *Store) Capture(ctx context.Context, r Request) (Snapshot, error) {
	if !filepath.IsAbs(r.Dir) {
		return Snapshot{}, fmt.Errorf("capture %q: the directory must be absolute", r.Dir)
	}
	dir := filepath.Clean(r.Dir)
	s.gc.RLock()
	defer s.gc.RUnlock()

	root, err := os.OpenRoot(dir)
	if err != nil {
		return Snapshot{}, fmt.Errorf("capture %s: %w", dir, err)
	}
	defer root.Close()
	pw := newPackWriter(s.sub("packs"))
	defer pw.abort()
	w := &walker{
		s: s, ctx: ctx, pw: pw, max: s.o.MaxFileSize,
		start: time.Now().Add(-s.racy).UnixNano(),
		old:   s.loadCache(dir), noGitignore: r.NoGitignore,
		sem:  make(chan struct{}, max(runtime.GOMAXPROCS(0), 2)),
		dirs: map[string]*dirCache{},
	}
	if w.old == nil {
		w.old, w.changed = &rootCache{}, true
	}
	rec := &record{dir: dir, noGitignore: r.NoGitignore, exclude: slices.Clone(r.Exclude)}
	var rs *rules
	if !r.NoGitignore || len(r.Exclude) > 0 {
		rs, err = w.aboveRules(dir, r.Exclude, rec)
		if err != nil {
			return Snapshot{}, err
		}
	}
	top, err := w.dir(root, "", rs)
	if err != nil {
		return Snapshot{}, fmt.Errorf("capture %s: %w", dir, err)
	}
	rec.tree = top.tree
	rec.rules = append(rec.rules, w.rules...)
	slices.SortFunc(rec.rules, func(a, b rule) int { return strings.Compare(a.base, b.base) })
	if err := w.extras(dir, r.Files, rec); err != nil {
		return Snapshot{}, err
	}
	rec.count, rec.bytes, rec.notStored = w.count, w.bytes, w.notStored
	raw := rec.encode()
	h := sha256.Sum256(raw)
	id := ID(sum(h).String())
	if !s.has(h) {
		if err := pw.add(objSnap, h, raw); err != nil {
			return Snapshot{}, err
		}
	}
	added := pw.written
	if err := s.commit(pw); err != nil {
		return Snapshot{}, fmt.Errorf("capture %s: %w", dir, err)
	}
	if err := s.addRef(r.Owner, id); err != nil {
		return Snapshot{}, err
	}
	if err := s.saveCache(dir, &rootCache{id: id, dirs: w.dirs}, w.changed || w.old.id != id); err != nil {
		s.log.Warn("snapshot stat cache not saved", "dir", dir, "err", err)
	}
	return Snapshot{ID: id, Dir: dir, Files: rec.count, Bytes: rec.bytes, NotStored: rec.notStored, Read: int(w.read.Load()), Added: added}, nil
}

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

	mu               sync.Mutex // guards the fields below
	dirs             map[string]*dirCache
	rules            []rule
	count, notStored int
	bytes            int64
	changed          bool // the cache differs from the old one
}

type dirResult struct {
	tree   sum
	opaque bool
	err    error
}

// dir captures the directory r, at rel, under the rules rs.
func (w *walker) dir(r *os.Root, rel string, rs *rules) (dirResult, error) {
	if err := w.ctx.Err(); err != nil {
		return dirResult{}, err
	}
	f, err := r.Open(".")
	if err != nil {
		return dirResult{opaque: true}, err
	}
	infos, err := f.Readdir(-1)
	f.Close()
	if err != nil {
		return dirResult{opaque: true}, err
	}
	slices.SortFunc(infos, func(a, b fs.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	var old []cacheEnt
	var oldDir *dirCache
	if w.old.dirs != nil {
		if oldDir = w.old.dirs[rel]; oldDir != nil {
			old = oldDir.ents
		}
	}
	if !w.noGitignore {
		if i, ok := slices.BinarySearchFunc(infos, ".gitignore", func(a fs.FileInfo, n string) int { return strings.Compare(a.Name(), n) }); ok && infos[i].Mode().IsRegular() {
			pf, err := w.gitignore(r, rel, infos[i], old)
			if err != nil {
				return dirResult{}, err
			}
			rs = rs.with(rel, pf)
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
			subs = append(subs, subdir{at: len(ents), info: info})
			ents = append(ents, cacheEnt{entry: entry{name: name, kind: kDir}})
			continue
		case mode.IsRegular():
			x, err := w.file(r, name, info, prev)
			if err != nil {
				return dirResult{}, err
			}
			ents = append(ents, x)
			count++
			bytes += x.size
			if x.kind == kBig {
				notStored++
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
			sd.res, sd.res.err = w.dir(sub, join(rel, sd.info.Name()), rs)
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

func (x *cacheEnt) sameStat(o *cacheEnt) bool {
	return x.dev == o.dev && x.ino == o.ino && x.mtimeNs == o.mtimeNs && x.ctimeNs == o.ctimeNs &&
		x.statSize == o.statSize && x.entry.same(&o.entry)
}

// file records the regular file name of r; prev is what the last capture saw of it.
func (w *walker) file(r *os.Root, name string, info fs.FileInfo, prev *cacheEnt) (cacheEnt, error) {
	dev, ino, mtime, ctime := statOf(info)
	x := cacheEnt{entry: entry{name: name, perm: uint32(info.Mode().Perm()), size: info.Size()},
		dev: dev, ino: ino, mtimeNs: mtime, ctimeNs: ctime, statSize: info.Size()}
	if prev != nil && !prev.racy && (prev.kind == kFile || prev.kind == kBig) &&
		prev.dev == dev && prev.ino == ino && prev.mtimeNs == mtime && prev.ctimeNs == ctime &&
		prev.statSize == x.statSize && prev.perm == x.perm {
		x.entry = prev.entry
		return x, nil
	}
	x.racy = ctime >= w.start
	if x.size > w.max {
		x.kind, x.mtime = kBig, mtime
		return x, nil
	}
	w.read.Add(1)
	data, err := readRegular(r, name, info, w.max)
	switch {
	case errors.Is(err, errTooBig):
		x.kind, x.mtime = kBig, mtime
		return x, nil
	case err != nil:
		// unreadable (a permission, or a file replaced while read): recorded, not stored
		x.kind, x.mtime, x.racy = kBig, mtime, true
		return x, nil
	}
	x.kind, x.size = kFile, int64(len(data))
	x.hash = sha256.Sum256(data)
	if !w.s.has(x.hash) {
		if err := w.pw.add(objBlob, x.hash, data); err != nil {
			return cacheEnt{}, err
		}
	}
	return x, nil
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

// gitignore reads and parses the .gitignore of directory r (at rel), and records it as a
// rule of the snapshot.
func (w *walker) gitignore(r *os.Root, rel string, info fs.FileInfo, old []cacheEnt) (*patternFile, error) {
	var prev *cacheEnt
	if i, ok := slices.BinarySearchFunc(old, ".gitignore", func(a cacheEnt, n string) int { return strings.Compare(a.name, n) }); ok {
		prev = &old[i]
	}
	x, err := w.file(r, ".gitignore", info, prev)
	if err != nil || x.kind != kFile {
		return nil, err // too big or unreadable: no rules from it
	}
	h := x.hash
	w.s.mu.Lock()
	pf := w.s.rules[h]
	w.s.mu.Unlock()
	if pf == nil {
		// new, so its blob is still in the pack being written: read it again
		data, err := readRegular(r, ".gitignore", info, w.max)
		if err != nil {
			return nil, nil // gone since the listing
		}
		if h = sha256.Sum256(data); h != x.hash && !w.s.has(h) {
			// changed since: the rules are the ones read now
			if err := w.pw.add(objBlob, h, data); err != nil {
				return nil, err
			}
		}
		if pf, err = w.s.patterns(h, data); err != nil {
			return nil, err
		}
	}
	w.mu.Lock()
	w.rules = append(w.rules, rule{base: rel, blob: h})
	w.mu.Unlock()
	return pf, nil
}

// patterns returns the parsed .gitignore with blob h: from the parsed ones, from data when
// given, else from the store.
func (s *Store) patterns(h sum, data []byte) (*patternFile, error) {
	s.mu.Lock()
	pf := s.rules[h]
	s.mu.Unlock()
	if pf != nil {
		return pf, nil
	}
	if data == nil {
		var err error
		if data, err = s.object(h); err != nil {
			return nil, err
		}
	}
	pf = parsePatterns(data)
	s.mu.Lock()
	s.rules[h] = pf
	s.mu.Unlock()
	return pf, nil
}

// aboveRules reads the .gitignore files of dir's parents up to the top of the repository
// that holds dir (the nearest parent with a .git), if any, and adds them and the caller's
// patterns to rec.
func (w *walker) aboveRules(dir string, exclude []string, rec *record) (*rules, error) {
	var extra *patternFile
	if len(exclude) > 0 {
		extra = parsePatterns([]byte(strings.Join(exclude, "\n")))
	}
	if w.noGitignore {
		return aboveRules(dir, extra, nil), nil
	}
	var chain []string // dir's parents, nearest first
	top := ""
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			top = d
			break
		}
		up := filepath.Dir(d)
		if up == d {
			break
		}
		d = up
		chain = append(chain, d)
	}
	var files []abovePatterns
	if top != "" && top != dir {
		for i := len(chain) - 1; i >= 0; i-- {
			d := chain[i]
			if len(d) < len(top) {
				continue
			}
			pr, err := os.OpenRoot(d)
			if err != nil {
				continue
			}
			data, err := readRegular(pr, ".gitignore", nil, w.max)
			pr.Close()
			if err != nil {
				continue
			}
			h := sha256.Sum256(data)
			if !w.s.has(h) {
				if err := w.pw.add(objBlob, h, data); err != nil {
					return nil, err
				}
			}
			pf, err := w.s.patterns(h, data)
			if err != nil {
				return nil, err
			}
			rec.rules = append(rec.rules, rule{base: d, blob: h})
			files = append(files, abovePatterns{dir: d, pf: pf})
		}
	}
	return aboveRules(dir, extra, files), nil
}

// extras records the files captured one by one that the walk did not record.
func (w *walker) extras(dir string, paths []string, rec *record) error {
	seen := map[string]bool{}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("capture %q: the path must be absolute", p)
		}
		p = filepath.Clean(p)
		name := p
		if rel, err := filepath.Rel(dir, p); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			name = filepath.ToSlash(rel)
			if w.inTree(name) {
				continue
			}
		} else if rel == "." {
			continue
		}
		if inGit(filepath.ToSlash(p)) || seen[name] {
			continue
		}
		seen[name] = true
		x := extra{path: name}
		pr, err := os.OpenRoot(filepath.Dir(p))
		if err == nil {
			x.present, x.e, err = w.single(pr, filepath.Base(p))
			pr.Close()
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("capture %s: %w", p, err)
		}
		rec.files = append(rec.files, x)
		if x.present && x.e.kind != kDir {
			w.count++
			w.bytes += x.e.size
			if x.e.kind == kBig {
				w.notStored++
			}
		}
	}
	slices.SortFunc(rec.files, func(a, b extra) int { return strings.Compare(a.path, b.path) })
	return nil
}

// inTree reports whether the walk recorded the relative path p.
func (w *walker) inTree(p string) bool {
	d := w.dirs[parent(p)]
	if d == nil {
		return false
	}
	name := p[strings.LastIndexByte(p, '/')+1:]
	_, ok := slices.BinarySearchFunc(d.ents, name, func(a cacheEnt, n string) int { return strings.Compare(a.name, n) })
	return ok
}

// single records one file, name in r: present false when there is none (or it is of a type
// not recorded).
func (w *walker) single(r *os.Root, name string) (bool, entry, error) {
	info, err := r.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, entry{}, nil
	}
	if err != nil {
		return false, entry{}, err
	}
	var x cacheEnt
	switch mode := info.Mode(); {
	case mode.IsRegular():
		x, err = w.file(r, name, info, nil)
	case mode&fs.ModeSymlink != 0:
		x, err = w.link(r, name, info, nil)
	case mode.IsDir():
		x.kind = kOpaque // a directory named on its own: recorded as there, not walked
	default:
		return false, entry{}, nil
	}
	x.name = ""
	return err == nil, x.entry, err
}
