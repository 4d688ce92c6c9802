package snapshot

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// CaptureRequest asks for a capture of a directory.
type CaptureRequest struct {
	// Owner keeps the snapshot (a session's id): it stays in the store until the owner's
	// Prune leaves it out.
	Owner string `json:"owner"`
	// Dir is the directory captured, absolute: the session's directory.
	Dir string `json:"dir"`
	// Files are absolute paths captured one by one, present or absent: a file the editor
	// wrote outside Dir, or one inside it that the .gitignore files leave out. A path in a
	// .git directory is left out.
	Files []string `json:"files,omitempty"`
	// Exclude holds more patterns in .gitignore syntax, relative to Dir, which the
	// .gitignore files override (as git's info/exclude).
	Exclude []string `json:"exclude,omitempty"`
	// NoGitignore captures the files the .gitignore files leave out too (never .git).
	NoGitignore bool `json:"no_gitignore,omitempty"`
	// MaxFiles bounds the entries the walk may list (files, symlinks and directories,
	// ignored ones at the level listed included): past it the capture stops with
	// [ErrTooLarge], having stored nothing of its own. 0 means no bound. It keeps a session
	// opened in a home directory, say, from walking and storing all of it.
	MaxFiles int `json:"max_files,omitempty"`
	// MaxFileSize, when positive, is the size above which a file is recorded as changed but
	// not stored, in place of the store's [Options.MaxFileSize]: the caller's setting,
	// also for a store of another host.
	MaxFileSize int64 `json:"max_file_size,omitempty"`
	// MaxTime, when positive, bounds the walk: past it the capture stops with
	// [ErrTooLarge], having stored nothing of its own. It keeps the first capture of a
	// large directory no one chose (a remote host's login directory) from running for
	// minutes.
	MaxTime time.Duration `json:"max_time,omitempty"`
	// Watch lets the capture trust the store's watch of the directory (inotify on Linux):
	// a directory nothing happened in since the last capture is not listed again, its
	// tree taken from that capture. Without it every directory is listed. Either way the
	// directories listed are watched for the next capture (see [Store.Capture]).
	Watch bool `json:"watch,omitempty"`
}

// ExcludeDir returns the pattern of CaptureRequest.Exclude that leaves out the directory
// sub of dir (both absolute and clean), its special characters escaped.
func ExcludeDir(dir, sub string) string {
	rel := strings.TrimPrefix(sub, dir+"/")
	var b strings.Builder
	b.WriteByte('/')
	for _, c := range []byte(rel) {
		if strings.IndexByte(`*?[\ `, c) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('/')
	return b.String()
}

// ErrTooLarge reports a capture stopped at [CaptureRequest.MaxFiles].
var ErrTooLarge = errors.New("snapshot: the directory holds more files than a capture may list")

// CaptureResult describes a capture: the snapshot it made.
type CaptureResult struct {
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
	// Listed counts the directories listed: all of them, or with a trusted watch only
	// those something happened in (and their parents).
	Listed int `json:"listed"`
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
//
// Each directory listed is watched first (on Linux, local file systems), so that a later
// capture with r.Watch lists only the directories that had events since; what the watch
// cannot stand for is listed every time (see watch.go). Captures of one directory take
// turns.
func (s *Store) Capture(ctx context.Context, r CaptureRequest) (CaptureResult, error) {
	if !filepath.IsAbs(r.Dir) {
		return CaptureResult{}, fmt.Errorf("capture %q: the directory must be absolute", r.Dir)
	}
	if r.Owner == "" {
		return CaptureResult{}, fmt.Errorf("capture %s: no owner", r.Dir)
	}
	dir := filepath.Clean(r.Dir)
	s.gc.RLock()
	defer s.gc.RUnlock()

	dw := s.watch.root(dir)
	if dw != nil {
		dw.capture.Lock()
		defer dw.capture.Unlock()
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return CaptureResult{}, fmt.Errorf("capture %s: %w", dir, err)
	}
	defer root.Close()
	rootInfo, err := root.Stat(".")
	if err != nil {
		return CaptureResult{}, fmt.Errorf("capture %s: %w", dir, err)
	}
	pw := newPackWriter(s.sub("packs"))
	defer pw.abort()
	maxSize := s.o.MaxFileSize
	if r.MaxFileSize > 0 {
		maxSize = r.MaxFileSize
	}
	w := &walker{
		s: s, ctx: ctx, pw: pw, max: maxSize,
		start: time.Now().Add(-s.racy).UnixNano(),
		old:   s.loadCache(dir), noGitignore: r.NoGitignore,
		sem:  make(chan struct{}, max(runtime.GOMAXPROCS(0), 2)),
		dirs: map[string]*dirCache{}, maxFiles: int64(r.MaxFiles),
		reused: map[string]bool{}, always: map[string]bool{},
	}
	w.rootDev, _, _, _ = statOf(rootInfo)
	if r.MaxTime > 0 {
		w.deadline = time.Now().Add(r.MaxTime)
	}
	if w.old == nil {
		w.old, w.changed = &rootCache{}, true
	}
	if under(s.dir, dir) && s.dir != dir {
		// The store itself, when it is inside the directory (a session in the home of a
		// remote host, say): capturing it would record each capture's packs.
		r.Exclude = append([]string{ExcludeDir(dir, s.dir)}, r.Exclude...)
	}
	rec := &record{dir: dir, noGitignore: r.NoGitignore, exclude: slices.Clone(r.Exclude)}
	var rs *rules
	if !r.NoGitignore || len(r.Exclude) > 0 {
		rs, err = w.aboveRules(dir, r.Exclude, rec)
		if err != nil {
			return CaptureResult{}, err
		}
	}
	if dw != nil {
		w.plan = s.watch.plan(dw, r.Watch, watchKey(r, maxSize, rec.rules), w.old)
	}
	res, err := w.capture(root, rootInfo, rs, rec, r)
	if w.plan != nil {
		w.plan.finish(w.saved, w.treeRules(), w.always) // nil after a failure
	}
	return res, err
}

// capture walks dir (open as root) and stores its snapshot.
func (w *walker) capture(root *os.Root, rootInfo fs.FileInfo, rs *rules, rec *record, r CaptureRequest) (CaptureResult, error) {
	s, dir := w.s, rec.dir
	var top dirResult
	var err error
	if dc := w.reusable("", rootInfo, w.rootEnt()); dc != nil && w.reuse("", dc) {
		top = dirResult{tree: dc.tree}
	} else {
		top, err = w.dir(root, "", rs, false)
	}
	if errors.Is(err, ErrTooLarge) && w.slow.Load() {
		return CaptureResult{}, fmt.Errorf("capture %s: still walking after %s: %w", dir, r.MaxTime, err)
	}
	if errors.Is(err, ErrTooLarge) {
		return CaptureResult{}, fmt.Errorf("capture %s: more than %d files: %w", dir, r.MaxFiles, err)
	}
	if err != nil {
		return CaptureResult{}, fmt.Errorf("capture %s: %w", dir, err)
	}
	rec.tree = top.tree
	rec.rules = append(rec.rules, w.treeRules()...)
	slices.SortFunc(rec.rules, func(a, b rule) int { return strings.Compare(a.base, b.base) })
	if err := w.extras(dir, r.Files, rec); err != nil {
		return CaptureResult{}, err
	}
	rec.count, rec.bytes, rec.notStored = w.count, w.bytes, w.notStored
	raw := rec.encode()
	h := sha256.Sum256(raw)
	id := ID(sum(h).String())
	if !s.has(h) {
		if err := w.pw.add(objSnap, h, raw); err != nil {
			return CaptureResult{}, err
		}
	}
	added := w.pw.written
	if err := s.commit(w.pw); err != nil {
		return CaptureResult{}, fmt.Errorf("capture %s: %w", dir, err)
	}
	if err := s.addRef(r.Owner, id); err != nil {
		return CaptureResult{}, err
	}
	w.saved = &rootCache{id: id, dirs: w.dirs}
	if err := s.saveCache(dir, w.saved, w.changed || w.old.id != id); err != nil {
		s.log.Warn("snapshot stat cache not saved", "dir", dir, "err", err)
	}
	return CaptureResult{ID: id, Dir: dir, Files: rec.count, Bytes: rec.bytes, NotStored: rec.notStored,
		Read: int(w.read.Load()), Added: added, Listed: int(w.dirsListed.Load())}, nil
}

// rootEnt is what the old cache and the watch know of the directory itself, as the
// entry its parent would hold.
func (w *walker) rootEnt() *cacheEnt {
	dc := w.old.dirs[""]
	if dc == nil || w.plan == nil {
		return nil
	}
	wt := w.plan.byRel[""]
	return &cacheEnt{entry: entry{kind: kDir, hash: dc.tree}, dev: wt.dev, ino: wt.ino}
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
