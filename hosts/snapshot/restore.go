package snapshot

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// RestoreRequest asks to put files back as snapshot To has them where they are still as
// snapshot From has them. Undo of a turn is From: the turn's last snapshot, To: its first;
// redo is the reverse; the revert of one file names it in Paths.
type RestoreRequest struct {
	From ID `json:"from"`
	To   ID `json:"to"`
	// Paths restores only these files and what is under these directories (a rename both
	// of its paths); nil restores every file that differs from From to To.
	Paths []Path `json:"paths,omitempty"`
	// Force overwrites these files (and what is under these directories) even where they
	// changed since From.
	Force []Path `json:"force,omitempty"`
}

// Reason says why a file was left alone.
type Reason string

// The reasons a restore leaves a file alone.
const (
	// ReasonChanged: the file on disk is neither as From nor as To has it: it changed
	// since (the person, a later turn, another session). Force overwrites it.
	ReasonChanged Reason = "changed"
	// ReasonNotStored: To recorded the file without its content (over the size cap, or
	// unreadable then).
	ReasonNotStored Reason = "not_stored"
	// ReasonUntracked: a snapshot did not see the file (ignored, unreadable or outside the
	// directory there), so what to put back is unknown, or what is on disk cannot be told
	// apart from a change since; Force overwrites it when To's state is known.
	ReasonUntracked Reason = "untracked"
	// ReasonNotEmpty: a directory to remove still holds files.
	ReasonNotEmpty Reason = "not_empty"
	// ReasonBlocked: the way to the file is not a directory of the tree (a symlink, a file,
	// .git): nothing is written through it.
	ReasonBlocked Reason = "blocked"
	// ReasonFailed: writing it failed; Detail says how.
	ReasonFailed Reason = "failed"
)

// Conflict is a file a restore left alone.
type Conflict struct {
	Path   Path   `json:"path"`
	Reason Reason `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// RestoreResult is what a restore did.
type RestoreResult struct {
	// Restored lists the paths (directories included) that are now as To has them:
	// written by this call, or found so already (by a run that a crash cut short). The
	// caller journals it.
	Restored  []Path     `json:"restored"`
	Conflicts []Conflict `json:"conflicts"`
}

// Restore puts the files that differ from r.From to r.To back as r.To has them, each
// where the disk still holds what r.From has (or where r.Force names it), and lists the
// others as conflicts.
//
// Each file is written beside itself (a temporary name in its directory, synced) and
// renamed into place, so that a crash leaves it either as it was or as To has it; the
// directories are synced after. Nothing is written through a symlink: every directory on
// the way is opened without following one, and a symlink in the tree is replaced, never
// followed. Nothing is written in a .git directory. Restore is idempotent: a file already
// as To has it counts as restored, so running it again after a crash completes it.
//
// A restored file gets the time of the restore as its mtime (as git checkout does), so
// that build tools see it changed.
func (s *Store) Restore(ctx context.Context, r RestoreRequest) (*RestoreResult, error) {
	s.gc.RLock()
	defer s.gc.RUnlock()
	rf, err := s.record(r.From)
	if err != nil {
		return nil, err
	}
	rt, err := s.record(r.To)
	if err != nil {
		return nil, err
	}
	chs, err := s.changes(ctx, rf, rt)
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", rt.dir, err)
	}
	chs = selectChanges(chs, r.Paths)
	res := &RestoreResult{Restored: []Path{}, Conflicts: []Conflict{}}
	if len(chs) == 0 {
		return res, nil
	}
	rs := &restorer{s: s, dir: rt.dir, roots: map[string]*os.Root{}, synced: map[string]*os.Root{}}
	defer rs.close()
	if rs.top, err = os.OpenRoot(rt.dir); err != nil {
		return nil, fmt.Errorf("restore %s: %w", rt.dir, err)
	}

	// Decide every file before touching any, parents first: a directory that this restore
	// makes where a file or a symlink is now will hold its files.
	var ops []*op
	made := map[string]bool{}
	for i := range chs {
		c := &chs[i]
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		o := &op{change: c}
		forced := selected(r.Force, Path(c.path), "") && r.Force != nil
		o.reason, o.detail, o.done = rs.decide(c, forced, &o.disk, made)
		if o.reason == "" && !o.done && c.after.isDir() && !o.disk.isDir {
			made[c.path] = true
		}
		ops = append(ops, o)
	}

	// Removals, deepest first: what To does not have, or has as another kind (a directory
	// where a file was, or the reverse).
	for i := len(ops) - 1; i >= 0; i-- {
		o := ops[i]
		if o.reason != "" || o.done || !o.disk.exists || (o.after != nil && o.after.isDir() == o.disk.isDir) {
			continue
		}
		if err := rs.remove(o.path, o.disk.isDir); err != nil {
			o.fail(err)
		}
	}
	// Directories, parents first.
	for _, o := range ops {
		if o.reason != "" || o.done || !o.after.isDir() || (o.disk.exists && o.disk.isDir) {
			continue
		}
		if err := rs.mkdir(o.path); err != nil {
			o.fail(err)
		}
	}
	// Files and symlinks, in parallel: each is a read, a write, a sync and a rename.
	var work []*op
	for _, o := range ops {
		if o.reason == "" && !o.done && o.after != nil && !o.after.isDir() {
			work = append(work, o)
		}
	}
	next := make(chan *op)
	var wg sync.WaitGroup
	for range min(len(work), 8) {
		wg.Go(func() {
			for o := range next {
				if err := rs.put(o.path, o.after); err != nil {
					o.fail(err)
				}
			}
		})
	}
	for _, o := range work {
		if ctx.Err() != nil {
			o.fail(ctx.Err())
			continue
		}
		next <- o
	}
	close(next)
	wg.Wait()
	if err := rs.syncDirs(); err != nil {
		return nil, fmt.Errorf("restore %s: %w", rt.dir, err)
	}

	for i, o := range ops {
		// a directory is listed only if nothing under it is, as in a Diff
		if (o.after.isDir() || o.before.isDir()) && i+1 < len(ops) && strings.HasPrefix(ops[i+1].path, o.path+"/") {
			continue
		}
		if o.reason == "" {
			res.Restored = append(res.Restored, Path(o.path))
		} else {
			res.Conflicts = append(res.Conflicts, Conflict{Path: Path(o.path), Reason: o.reason, Detail: o.detail})
		}
	}
	return res, ctx.Err()
}

// selectChanges keeps the changes under paths, and both sides of a rename of which one is.
func selectChanges(chs []change, paths []Path) []change {
	if paths == nil {
		return chs
	}
	sel := slices.Clone(paths)
	for _, c := range publicChanges(chs) {
		if c.Kind == Renamed && selected(paths, c.Path, c.OldPath) {
			sel = append(sel, c.Path, c.OldPath)
		}
	}
	var out []change
	for _, c := range chs {
		if selected(sel, Path(c.path), "") {
			out = append(out, c)
		}
	}
	return out
}

// op is one path of a restore.
type op struct {
	*change
	disk   diskState
	done   bool   // already as To has it
	reason Reason // left alone, and why
	detail string
}

func (o *op) fail(err error) {
	o.reason, o.detail = ReasonFailed, err.Error()
	var b *blockedError
	if errors.As(err, &b) {
		o.reason = ReasonBlocked
	}
	if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
		o.reason = ReasonNotEmpty
	}
}

// diskState is what is at a path now.
type diskState struct {
	exists, isDir bool
	kind          kind // kFile, kLink, kDir; 0 for another type (a FIFO …)
	perm          uint32
	size, mtime   int64
	target        string
	hashed        bool
	hash          sum
}

// restorer holds one restore's open directories.
type restorer struct {
	s   *Store
	dir string
	top *os.Root

	mu     sync.Mutex          // guards the fields below
	roots  map[string]*os.Root // directories opened, by path (relative, or absolute outside)
	synced map[string]*os.Root // directories written to, to sync at the end
}

func (rs *restorer) close() {
	for _, r := range rs.roots {
		r.Close()
	}
	if rs.top != nil {
		rs.top.Close()
	}
}

// blockedError reports a way to a file that is not a directory of the tree.
type blockedError struct{ path, why string }

func (e *blockedError) Error() string { return e.path + ": " + e.why }

// decide says whether the change's path can be put back: "" (with d filled in) or why not;
// done when it is already as To has it.
func (rs *restorer) decide(c *change, forced bool, d *diskState, made map[string]bool) (_ Reason, detail string, done bool) {
	if inGit(c.path) {
		return ReasonBlocked, "in .git", false
	}
	if c.afterUnknown {
		return ReasonUntracked, "not captured in the snapshot restored", false
	}
	var err error
	*d, err = rs.stat(c.path)
	var b *blockedError
	switch {
	case errors.As(err, &b) && made[b.path]:
		*d, err = diskState{}, nil // in a directory still to make: nothing there yet
	case errors.As(err, &b):
		return ReasonBlocked, b.why, false
	case err != nil:
		return ReasonFailed, err.Error(), false
	}
	if ok, err := rs.matches(c.path, d, c.after); err != nil {
		return ReasonFailed, err.Error(), false
	} else if ok {
		return "", "", true
	}
	if c.after != nil && c.after.kind == kBig {
		return ReasonNotStored, "", false
	}
	if forced {
		return "", "", false
	}
	if c.beforeUnknown {
		return ReasonUntracked, "not captured in the snapshot replaced", false
	}
	if ok, err := rs.matches(c.path, d, c.before); err != nil {
		return ReasonFailed, err.Error(), false
	} else if !ok {
		return ReasonChanged, "", false
	}
	return "", "", false
}

// locate returns the directory that holds p, opened without following symlinks (create:
// making the missing ones), and p's name in it. nil when a directory is missing.
func (rs *restorer) locate(p string, create bool) (*os.Root, string, error) {
	if strings.HasPrefix(p, "/") {
		dir := filepath.Dir(p)
		rs.mu.Lock()
		defer rs.mu.Unlock()
		r := rs.roots[dir]
		if r == nil {
			var err error
			if r, err = os.OpenRoot(dir); errors.Is(err, fs.ErrNotExist) {
				return nil, filepath.Base(p), nil
			} else if err != nil {
				return nil, "", err
			}
			rs.roots[dir] = r
		}
		return r, filepath.Base(p), nil
	}
	r, err := rs.openDir(parent(p), create)
	return r, p[strings.LastIndexByte(p, '/')+1:], err
}

// openDir opens the relative directory rel, one element at a time: each must be a
// directory (not a symlink to one), checked again once open. A missing one is made when
// create is set; else openDir returns nil.
func (rs *restorer) openDir(rel string, create bool) (*os.Root, error) {
	if rel == "" {
		return rs.top, nil
	}
	rs.mu.Lock()
	r := rs.roots[rel]
	rs.mu.Unlock()
	if r != nil {
		return r, nil
	}
	up, err := rs.openDir(parent(rel), create)
	if up == nil || err != nil {
		return nil, err
	}
	name := rel[strings.LastIndexByte(rel, '/')+1:]
	info, err := up.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return nil, nil
		}
		if err := up.Mkdir(name, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		rs.wrote(parent(rel), up)
		if info, err = up.Lstat(name); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, &blockedError{rel, "not a directory (" + kindName(info.Mode()) + ")"}
	}
	r, err = up.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	if now, err := r.Stat("."); err != nil || !os.SameFile(now, info) {
		r.Close()
		return nil, &blockedError{rel, "replaced while opened"}
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if prev := rs.roots[rel]; prev != nil {
		r.Close()
		return prev, nil
	}
	rs.roots[rel] = r
	return r, nil
}

func kindName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m.IsRegular():
		return "a file"
	}
	return "not a directory"
}

// forget drops the open directories at and under rel (removed or replaced).
func (rs *restorer) forget(rel string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for p, r := range rs.roots {
		if under(p, rel) {
			r.Close()
			delete(rs.roots, p)
			delete(rs.synced, p)
		}
	}
}

func (rs *restorer) wrote(rel string, r *os.Root) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.synced[rel] = r
}

// stat returns what is at p now, without following a symlink.
func (rs *restorer) stat(p string) (diskState, error) {
	r, name, err := rs.locate(p, false)
	if err != nil || r == nil {
		return diskState{}, err
	}
	info, err := r.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return diskState{}, nil
	}
	if err != nil {
		return diskState{}, err
	}
	d := diskState{exists: true, isDir: info.IsDir(), size: info.Size(), perm: uint32(info.Mode().Perm())}
	_, _, d.mtime, _ = statOf(info)
	switch m := info.Mode(); {
	case m.IsRegular():
		d.kind = kFile
	case m&fs.ModeSymlink != 0:
		d.kind, d.perm = kLink, 0
		if d.target, err = r.Readlink(name); err != nil {
			return diskState{}, err
		}
	case m.IsDir():
		d.kind, d.perm = kDir, 0
	}
	return d, nil
}

// matches reports whether the disk's state d of p is e (nil: absent).
func (rs *restorer) matches(p string, d *diskState, e *entry) (bool, error) {
	if e == nil {
		return !d.exists, nil
	}
	if !d.exists {
		return false, nil
	}
	switch e.kind {
	case kDir, kOpaque:
		return d.isDir, nil
	case kLink:
		return d.kind == kLink && d.target == e.target, nil
	case kBig:
		return d.kind == kFile && d.perm == e.perm && d.size == e.size && d.mtime == e.mtime, nil
	}
	if d.kind != kFile || d.perm != e.perm || d.size != e.size {
		return false, nil
	}
	if !d.hashed {
		r, name, err := rs.locate(p, false)
		if err != nil || r == nil {
			return false, err
		}
		data, err := readRegular(r, name, nil, d.size)
		if errors.Is(err, errTooBig) {
			return false, nil // grew since
		}
		if err != nil {
			return false, err
		}
		d.hash, d.hashed = sha256.Sum256(data), true
	}
	return d.hash == e.hash, nil
}

// remove removes p: a file or symlink, or an empty directory.
func (rs *restorer) remove(p string, isDir bool) error {
	r, name, err := rs.locate(p, false)
	if err != nil || r == nil {
		return err
	}
	if isDir {
		rs.forget(p)
	}
	if err := r.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	rs.wrote(parentKey(p), r)
	return nil
}

// mkdir makes the directory p.
func (rs *restorer) mkdir(p string) error {
	r, name, err := rs.locate(p, true)
	if err == nil && r == nil {
		err = fs.ErrNotExist
	}
	if err != nil {
		return err
	}
	if err := r.Mkdir(name, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	rs.wrote(parentKey(p), r)
	return nil
}

// put writes p as e has it: a file from its blob, or a symlink, beside itself, then
// renamed into place.
func (rs *restorer) put(p string, e *entry) error {
	r, name, err := rs.locate(p, true)
	if err == nil && r == nil {
		err = fs.ErrNotExist
	}
	if err != nil {
		return err
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := ".myco-restore-" + hex.EncodeToString(rnd[:])
	switch e.kind {
	case kLink:
		if err := r.Symlink(e.target, tmp); err != nil {
			return err
		}
	case kFile:
		data, err := rs.s.object(e.hash)
		if err != nil {
			return err
		}
		f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Chmod(fs.FileMode(e.perm))
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			r.Remove(tmp)
			return err
		}
	default:
		return fmt.Errorf("cannot write a %c", e.kind)
	}
	if err := r.Rename(tmp, name); err != nil {
		r.Remove(tmp)
		return err
	}
	rs.wrote(parentKey(p), r)
	return nil
}

// parentKey is the key of p's directory in rs.roots.
func parentKey(p string) string {
	if strings.HasPrefix(p, "/") {
		return filepath.Dir(p)
	}
	return parent(p)
}

// syncDirs syncs the directories written to, so that the renames last.
func (rs *restorer) syncDirs() error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var wg sync.WaitGroup
	errs := make(chan error, len(rs.synced))
	for _, r := range rs.synced {
		wg.Go(func() {
			f, err := r.Open(".")
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			if err := f.Sync(); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
