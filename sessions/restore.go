package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"myco.dev/agent/model"
	"myco.dev/api"
	"myco.dev/hosts/snapshot"
)

// The operations that put a session's files back.
const (
	OpUndo   = "undo"   // a turn's changes taken away
	OpRedo   = "redo"   // an undone turn's changes put back
	OpRevert = "revert" // one file put back as it was before a turn, or the session
	OpRewind = "rewind" // the files put back as before an edited message's turn (Edit with "restore code")
)

// Errors of the restores, which callers branch on with errors.Is.
var (
	// ErrNotUndoable reports an undo of a turn that captured no change or is undone
	// already, or a redo of one that is not undone.
	ErrNotUndoable = errors.New("sessions: nothing to undo or redo")
	// ErrConflict matches a [ConflictError].
	ErrConflict = errors.New("sessions: files changed since the turn")
)

// ConflictError reports a restore refused because files changed since the turn (by a
// person, a later turn, another session): nothing was written. Overwriting them is asked
// for by naming them.
type ConflictError struct {
	Session string
	Files   []api.ConflictFile
}

func (e *ConflictError) Error() string {
	paths := make([]string, 0, len(e.Files))
	for _, f := range e.Files {
		paths = append(paths, f.Path)
	}
	return fmt.Sprintf("%d file(s) changed since the turn, so nothing was put back: %s; choose to overwrite them, or leave them", len(e.Files), strings.Join(paths, ", "))
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// RestoreRequest asks for an undo, a redo or the revert of a file.
type RestoreRequest struct {
	Op   string   // OpUndo, OpRedo or OpRevert
	Turn *TurnRef // the turn; for a revert, nil means before the session's first turn
	// Host and Path name a revert's file (Host "" is local).
	Host, Path string
	// Overwrite names the conflicting files to overwrite all the same (a revert's path).
	Overwrite []string
	RequestID string // an API request's: the same id again answers the first result
}

// RestoreOutcome is what a restore did.
type RestoreOutcome struct {
	ID        string
	Restored  []HostPath
	LeftAlone []api.LeftAlone
	Repeat    bool // an earlier request with the same id did it
	At        time.Time
}

// HostPath is a file on a host.
type HostPath struct{ Host, Path string }

// restoreRec journals a restore: written before any file is touched (Done false), and
// again when it is over, with what it did. A restore whose second record is missing (the
// process stopped during it) is run again, which completes it, before the session's next
// restore or turn.
type restoreRec struct {
	ID        string        `json:"id"`
	Op        string        `json:"op"`
	Thread    string        `json:"thread,omitempty"`
	Turn      int           `json:"turn"`
	Parts     []restorePart `json:"parts"`
	Done      bool          `json:"done,omitempty"`
	At        time.Time     `json:"at"`
	RequestID string        `json:"request_id,omitempty"`
	// Latest and Entries are the session's latest thread and its entries when it was done:
	// the next input there tells the model which files changed.
	Latest  string `json:"latest,omitempty"`
	Entries int    `json:"entries,omitempty"`
}

// restorePart is a restore on one host.
type restorePart struct {
	Host      string              `json:"host"`
	From      snapshot.ID         `json:"from"`
	To        snapshot.ID         `json:"to"`
	Paths     []snapshot.Path     `json:"paths,omitempty"`
	Force     []snapshot.Path     `json:"force,omitempty"`
	Restored  []snapshot.Path     `json:"restored,omitempty"`
	LeftAlone []snapshot.Conflict `json:"left_alone,omitempty"`
	Error     string              `json:"error,omitempty"`
	Head      snapshot.ID         `json:"head,omitempty"` // the files as the restore left them
}

// noteRestore applies a restore record to the session: a new one is added, the end of one
// takes its place.
func (s *Session) noteRestore(r *restoreRec) {
	for i, old := range s.restores {
		if old.ID == r.ID {
			s.restores[i] = r
			s.noteHeads(r)
			return
		}
	}
	s.restores = append(s.restores, r)
	s.noteHeads(r)
}

func (s *Session) noteHeads(r *restoreRec) {
	if !r.Done {
		return
	}
	for _, p := range r.Parts {
		if p.Head != "" {
			s.setHead(p.Host, p.Head)
		}
	}
}

// noteCaptures follows the newest capture of each host, which a rewind of several turns
// and the revert of a file over the session restore from.
func (s *Session) noteCaptures(e Entry) {
	for _, c := range e.Snapshots {
		if c.After != "" {
			s.setHead(c.Host, c.After)
		}
	}
}

func (s *Session) setHead(host string, id snapshot.ID) {
	if s.heads == nil {
		s.heads = map[string]snapshot.ID{}
	}
	s.heads[host] = id
}

// undone reports whether the turn at entry turn of thread is undone: its last undo or
// redo was an undo.
func (s *Session) undone(thread string, turn int) bool {
	for i := len(s.restores) - 1; i >= 0; i-- {
		r := s.restores[i]
		if r.Thread == thread && r.Turn == turn && r.Done && (r.Op == OpUndo || r.Op == OpRedo) {
			return r.Op == OpUndo
		}
	}
	return false
}

// Undone reports whether the turn at entry turn of thread is undone.
func (s *Session) Undone(thread string, turn int) bool { return s.undone(thread, turn) }

// restoreByRequest returns the restore that request id did.
func (s *Session) restoreByRequest(id string) *restoreRec {
	for _, r := range s.restores {
		if id != "" && r.RequestID == id {
			return r
		}
	}
	return nil
}

// pendingRestore returns a restore that began and did not end, or nil.
func (s *Session) pendingRestore() *restoreRec {
	for _, r := range s.restores {
		if !r.Done {
			return r
		}
	}
	return nil
}

// recordRestore durably records r (its beginning or its end).
func (d *document) recordRestore(r *restoreRec) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sess.Upgraded != 0 {
		if err := d.upgrade(d.sess.Latest(), nil, nil); err != nil {
			return err
		}
	}
	if err := d.write(record{Kind: "restore", Restore: r}); err != nil {
		return err
	}
	d.sess.noteRestore(r)
	return nil
}

// Restore undoes or redoes a turn's changes to the session's files, or reverts one file
// (see [RestoreRequest]). Every file is first checked: one that changed since the turn is
// a conflict, and unless the request overwrites it nothing is written ([ConflictError]).
// A session that runs a job is busy: a turn that runs is stopped first. The restore is
// journaled: a crash during it leaves each file before or after, and the next restore or
// turn completes it. The model is told at its next turn which files changed.
func (m *Manager) Restore(ctx context.Context, id string, q RestoreRequest) (*RestoreOutcome, error) {
	l, err := m.open(ctx, id)
	if err != nil {
		return nil, err
	}
	rt := l.rt
	if rt.snaps == nil {
		return nil, ErrNoSnapshots
	}
	l.mu.Lock()
	j := l.job
	l.mu.Unlock()
	if j != nil {
		return nil, &BusyError{Session: id, Job: j.Kind}
	}
	if holder, held := m.o.Store.Holder(id); held {
		return nil, &BusyError{Session: id, Holder: holder}
	}
	if err := rt.acquire(ctx, nil); err != nil {
		return nil, err
	}
	defer rt.release()
	if err := rt.recover(ctx); err != nil {
		return nil, err
	}
	var done *restoreRec
	rt.doc.view(func(s *Session) { done = s.restoreByRequest(q.RequestID) })
	if done != nil {
		out := outcomeOf(done)
		out.Repeat = true
		return out, nil
	}
	if err := rt.finishRestore(ctx); err != nil {
		return nil, err
	}
	rec, err := rt.planRestore(q)
	if err != nil {
		return nil, err
	}
	if err := rt.restore(ctx, rec); err != nil {
		return nil, err
	}
	return outcomeOf(rec), nil
}

// planRestore works out what q restores, host by host.
func (rt *runtime) planRestore(q RestoreRequest) (*restoreRec, error) {
	rec := &restoreRec{Op: q.Op, At: rt.now().UTC(), RequestID: q.RequestID}
	var err error
	rt.doc.view(func(s *Session) {
		rec.ID = "r" + strconv.Itoa(len(s.restores)+1)
		var spans []span
		if q.Turn != nil {
			th := s.Latest()
			if q.Turn.Thread != "" {
				th = s.Thread(q.Turn.Thread)
			}
			if th == nil || !isTurnStart(th, q.Turn.Turn) {
				err = fmt.Errorf("session %s, thread %s, turn %d: %w", s.ID, q.Turn.Thread, q.Turn.Turn, ErrNoTurn)
				return
			}
			rec.Thread, rec.Turn = th.ID, q.Turn.Turn
			if th.open && th == s.Latest() && lastStart(th) == q.Turn.Turn {
				err = &BusyError{Session: s.ID, Job: JobTurn}
				return
			}
			spans = turnSpans(th, q.Turn.Turn)
			undone := s.undone(th.ID, q.Turn.Turn)
			switch {
			case q.Op == OpUndo && undone:
				err = fmt.Errorf("turn %d of thread %s is undone already: %w", q.Turn.Turn, th.ID, ErrNotUndoable)
				return
			case q.Op == OpRedo && !undone:
				err = fmt.Errorf("turn %d of thread %s is not undone: %w", q.Turn.Turn, th.ID, ErrNotUndoable)
				return
			}
		} else {
			// A revert over the session: from the newest state to before its first turn.
			spans = sessionSpans(s)
			for i := range spans {
				spans[i].After = s.heads[spans[i].Host]
			}
		}
		force := pathsOf(q.Overwrite)
		for _, sp := range spans {
			if sp.Before == "" || sp.After == "" || sp.Before == sp.After {
				continue
			}
			p := restorePart{Host: sp.Host, From: sp.After, To: sp.Before, Force: force}
			if q.Op == OpRedo {
				p.From, p.To = sp.Before, sp.After
			}
			if q.Op == OpRevert {
				host := q.Host
				if host == "" {
					host = "local"
				}
				if host != sp.Host {
					continue
				}
				p.Paths = []snapshot.Path{snapshot.Path(q.Path)}
			}
			rec.Parts = append(rec.Parts, p)
		}
	})
	if err != nil {
		return nil, err
	}
	if len(rec.Parts) == 0 {
		return nil, fmt.Errorf("%s: the turn changed no file that was captured: %w", q.Op, ErrNotUndoable)
	}
	return rec, nil
}

func pathsOf(ps []string) []snapshot.Path {
	if len(ps) == 0 {
		return nil
	}
	out := make([]snapshot.Path, len(ps))
	for i, p := range ps {
		out[i] = snapshot.Path(p)
	}
	return out
}

// restore checks every part of rec (a dry run), refuses conflicts that are not forced,
// and then journals and runs it. Call it with the writer gate held.
func (rt *runtime) restore(ctx context.Context, rec *restoreRec) error {
	conflicts, err := rt.conflicts(ctx, rec)
	if err != nil {
		return err
	}
	if len(conflicts) > 0 {
		return &ConflictError{Session: rt.doc.id, Files: conflicts}
	}
	if err := rt.save(rt.doc.recordRestore(rec)); err != nil {
		return err
	}
	return rt.complete(ctx, rec)
}

// conflicts returns the files rec would overwrite although they changed since (or were
// not captured), which it does not force: a dry run of each part.
func (rt *runtime) conflicts(ctx context.Context, rec *restoreRec) ([]api.ConflictFile, error) {
	var out []api.ConflictFile
	for _, p := range rec.Parts {
		dry, err := rt.snaps.Restore(ctx, p.Host, snapshot.RestoreRequest{From: p.From, To: p.To, Paths: p.Paths, Force: p.Force, DryRun: true})
		if err != nil {
			return nil, fmt.Errorf("check the files on %s: %w", p.Host, err)
		}
		for _, c := range dry.Conflicts {
			if c.Reason == snapshot.ReasonChanged || c.Reason == snapshot.ReasonUntracked {
				out = append(out, api.ConflictFile{Path: string(c.Path), Host: p.Host, Reason: string(c.Reason)})
			}
		}
	}
	return out, nil
}

// complete runs the parts of a journaled restore and records its end: what each part put
// back and left alone, and the files as it left them.
func (rt *runtime) complete(ctx context.Context, rec *restoreRec) error {
	end := *rec
	end.Parts = slices.Clone(rec.Parts)
	end.Done = true
	for i := range end.Parts {
		p := &end.Parts[i]
		res, err := rt.snaps.Restore(ctx, p.Host, snapshot.RestoreRequest{From: p.From, To: p.To, Paths: p.Paths, Force: p.Force})
		if res != nil {
			p.Restored, p.LeftAlone = res.Restored, res.Conflicts
		}
		if err != nil {
			// The journal stays open: the next restore or turn runs it again.
			return fmt.Errorf("restore the files on %s: %w", p.Host, err)
		}
		if c, err := rt.snaps.Capture(ctx, p.Host, captureRequest(rt.doc.id, rt.dir, rt.snapOpts, p.Host, nil)); err == nil {
			p.Head = c.ID
		}
	}
	rt.doc.view(func(s *Session) {
		if th := s.Latest(); th != nil {
			end.Latest, end.Entries = th.ID, len(th.Entries)
		}
	})
	if err := rt.save(rt.doc.recordRestore(&end)); err != nil {
		return err
	}
	*rec = end
	for _, p := range end.Parts {
		if len(p.Restored) == 0 {
			continue
		}
		files := make([]api.ChangedFile, 0, len(p.Restored))
		if d, err := rt.snaps.Diff(ctx, p.Host, p.From, p.To, snapshot.DiffOptions{NoPatch: true, Paths: p.Restored}); err == nil {
			files, _, _ = ChangedFiles(d)
		}
		cut := len(files) > maxEventFiles
		if cut {
			files = files[:maxEventFiles]
		}
		rt.emit(changesEv{Thread: end.Thread, Turn: end.Turn, Host: p.Host, Files: files, Cut: cut, Text: restoreText(&end, p)})
	}
	return nil
}

// finishRestore completes a restore that a stopped process left begun. Call it with the
// writer gate held.
func (rt *runtime) finishRestore(ctx context.Context) error {
	var pending *restoreRec
	rt.doc.view(func(s *Session) { pending = s.pendingRestore() })
	if pending == nil {
		return nil
	}
	rec := *pending
	return rt.complete(ctx, &rec)
}

// restoreText says what a restore did on a host, for a person.
func restoreText(r *restoreRec, p restorePart) string {
	what := map[string]string{OpUndo: "undid", OpRedo: "redid", OpRevert: "reverted", OpRewind: "put back"}[r.Op]
	s := fmt.Sprintf("%s %d file(s)", what, len(p.Restored))
	if r.Thread != "" {
		s += fmt.Sprintf(" of turn %d of thread %s", r.Turn, r.Thread)
	}
	if p.Host != "local" {
		s += " on " + p.Host
	}
	if n := len(p.LeftAlone); n > 0 {
		s += fmt.Sprintf("; %d left alone", n)
	}
	return s
}

// outcomeOf is what rec did.
func outcomeOf(rec *restoreRec) *RestoreOutcome {
	out := &RestoreOutcome{ID: rec.ID, At: rec.At, Restored: []HostPath{}, LeftAlone: []api.LeftAlone{}}
	for _, p := range rec.Parts {
		for _, r := range p.Restored {
			out.Restored = append(out.Restored, HostPath{Host: p.Host, Path: string(r)})
		}
		for _, c := range p.LeftAlone {
			out.LeftAlone = append(out.LeftAlone, api.LeftAlone{Path: string(c.Path), Host: p.Host, Reason: string(c.Reason), Detail: c.Detail})
		}
	}
	return out
}

// filesSource is the system-part source of the note that tells the model which files an
// undo, redo or revert changed.
const filesSource = "files"

// restoreNote returns the hidden note of the restores done since the last input of thread
// th (which has n entries), or "".
func restoreNote(s *Session, th *Thread, n int) string {
	var paths []string
	var ops []string
	for _, r := range s.restores {
		if !r.Done || r.Latest != th.ID || r.Entries != n {
			continue
		}
		ops = append(ops, r.Op)
		for _, p := range r.Parts {
			for _, f := range p.Restored {
				name := string(f)
				if p.Host != "local" {
					name = p.Host + ":" + name
				}
				if !slices.Contains(paths, name) {
					paths = append(paths, name)
				}
			}
		}
	}
	return filesNote(ops, paths)
}

// filesNote tells the model which files changed outside its tool calls.
func filesNote(ops, paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	const most = 100
	var b strings.Builder
	b.WriteString("[myco: files]\n")
	fmt.Fprintf(&b, "The user put files back (%s) since your last turn: these files changed outside your tool calls, so what you last read of them may be stale. Re-read a file before editing it.\n", strings.Join(slices.Compact(ops), ", "))
	for i, p := range paths {
		if i == most {
			fmt.Fprintf(&b, "- and %d more\n", len(paths)-most)
			break
		}
		fmt.Fprintf(&b, "- %s\n", p)
	}
	return b.String()
}

// withFilesNote adds the note of the restores done since th's last input to entry e, the
// next input.
func (rt *runtime) withFilesNote(th *Thread, e *Entry) {
	var note string
	rt.doc.view(func(s *Session) { note = restoreNote(s, th, len(th.Entries)) })
	if note != "" {
		e.Message.Parts = append(e.Message.Parts, model.SystemPart(filesSource, note))
	}
}

// rewindFiles puts the session's files back as they were before the turn of the edited
// message e (every later turn's changes taken away), for an Edit that restores code and
// conversation, and sets the note that tells the model. Call it with the writer gate held.
func (r *runner) rewindFiles(ctx context.Context, e *edit) error {
	rt := r.rt
	if rt.snaps == nil {
		return ErrNoSnapshots
	}
	rec := rt.rewindPlan(e.thread, e.entry)
	if len(rec.Parts) == 0 {
		return nil // nothing captured changed since
	}
	if err := rt.restore(ctx, rec); err != nil {
		return err
	}
	var paths []string
	for _, p := range rec.Parts {
		for _, f := range p.Restored {
			paths = append(paths, string(f))
		}
	}
	e.note = filesNote([]string{OpRewind}, paths)
	return nil
}

// rewindPlan is the restore that puts the files back as they were before the turn at entry
// of thread: from the newest capture of each host to the first capture from that turn on.
func (rt *runtime) rewindPlan(thread string, entry int) *restoreRec {
	rec := &restoreRec{Op: OpRewind, Thread: thread, Turn: entry, At: rt.now().UTC()}
	rt.doc.view(func(s *Session) {
		rec.ID = "r" + strconv.Itoa(len(s.restores)+1)
		th := s.Thread(thread)
		if th == nil || entry > len(th.Entries) {
			return
		}
		var spans []span
		for _, en := range th.Entries[entry:] {
			for _, c := range en.Snapshots {
				spans = addSpan(spans, c)
			}
		}
		for _, sp := range spans {
			if head := s.heads[sp.Host]; sp.Before != "" && head != "" && head != sp.Before {
				rec.Parts = append(rec.Parts, restorePart{Host: sp.Host, From: head, To: sp.Before})
			}
		}
	})
	return rec
}

// checkRewind refuses, before a job starts, an edit that restores code and conversation
// over files changed since ([ConflictError]); the job checks again as it restores.
func (rt *runtime) checkRewind(ctx context.Context, thread string, entry int) error {
	if rt.snaps == nil {
		return ErrNoSnapshots
	}
	rec := rt.rewindPlan(thread, entry)
	conflicts, err := rt.conflicts(ctx, rec)
	if err != nil {
		return err
	}
	if len(conflicts) > 0 {
		return &ConflictError{Session: rt.doc.id, Files: conflicts}
	}
	return nil
}
