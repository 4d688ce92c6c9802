package snapshot

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

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
	if c.before != nil && c.before.kind == kBig {
		// Replacing a file that was not stored could not be undone: a restore the other
		// way would not have it.
		return ReasonNotStored, "the file on disk was too large to store, so it is kept", false
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
