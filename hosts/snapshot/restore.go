package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	// DryRun decides every file and writes none: the result lists what a restore would put
	// back (or find so already) as Restored, and what it would leave alone as Conflicts.
	DryRun bool `json:"dry_run,omitempty"`
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
	// Restored lists the paths that are now as To has them: written by this call, or
	// found so already (by a run that a crash cut short). A directory is listed, as in a
	// [Diff], only when nothing under it is. The caller journals it.
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
//
// Once it has begun writing, Restore returns its result even with an error (ctx cancelled
// midway, a directory that failed to sync): the caller journals it either way.
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
	if r.DryRun {
		res.list(ops)
		return res, nil
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
	serr := rs.syncDirs()
	res.list(ops)
	if serr != nil {
		return res, fmt.Errorf("restore %s: sync: %w", rt.dir, serr)
	}
	return res, ctx.Err()
}

// list fills in what the restore of ops did (or would do).
func (res *RestoreResult) list(ops []*op) {
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
