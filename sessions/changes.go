package sessions

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"myco.dev/agent/model"
	"myco.dev/api"
	"myco.dev/hosts/snapshot"
)

// maxEventFiles bounds the files a changes event lists.
const maxEventFiles = 200

// changesEv reports the files a tool batch (or an undo, redo or revert) changed on host.
type changesEv struct {
	Thread string
	Turn   int // the turn's input entry
	Host   string
	Files  []api.ChangedFile
	Cut    bool
	Text   string // what an undo, redo or revert did
}

func (changesEv) isEvent() {}

// aroundBatch is the agent's AroundBatch: the batch runs between captures of the session's
// files on the hosts its calls may write on.
func (tn *turn) aroundBatch(ctx context.Context, calls []model.ToolCall, run func(context.Context) []model.ToolResult) []model.ToolResult {
	return tn.caps.around(ctx, calls, run, func(host string, err error) {
		tn.r.log.Warn("capture of the session's files failed", "session_id", tn.r.rt.doc.id, "host", host, "err", err)
	})
}

// changed reports what the batch whose captures caps are changed, host by host, once its
// checkpoint is saved; a batch that changed nothing reports nothing.
func (tn *turn) changed(ctx context.Context, caps []Capture) {
	rt := tn.r.rt
	for _, c := range caps {
		if c.Before == "" || c.After == "" || c.Before == c.After {
			continue
		}
		d, err := rt.snaps.Diff(ctx, c.Host, c.Before, c.After, snapshot.DiffOptions{NoPatch: true})
		if err != nil {
			tn.r.log.Warn("diff of a tool batch's captures failed", "session_id", rt.doc.id, "host", c.Host, "err", err)
			continue
		}
		files, _, _ := ChangedFiles(d)
		cut := len(files) > maxEventFiles
		if cut {
			files = files[:maxEventFiles]
		}
		rt.emit(changesEv{Thread: tn.th.ID, Turn: tn.start, Host: c.Host, Files: files, Cut: cut})
	}
}

// ChangedFiles describes a diff's changes for the API, with the lines they add and delete
// in all.
func ChangedFiles(d *snapshot.Diff) (files []api.ChangedFile, added, deleted int) {
	files = make([]api.ChangedFile, 0, len(d.Changes))
	for _, c := range d.Changes {
		f := api.ChangedFile{Path: string(c.Path), Status: string(c.Kind), OldPath: string(c.OldPath), Added: c.LinesAdded, Deleted: c.LinesDeleted,
			Binary: c.Binary, Untracked: c.Untracked, Patch: c.Patch, Cut: c.Cut}
		e := c.After
		if e == nil {
			e = c.Before
		}
		if e != nil {
			f.Type = string(e.Type)
		}
		if c.Before != nil {
			f.SizeBefore = c.Before.Size
			f.NotStored = f.NotStored || c.Before.NotStored
		}
		if c.After != nil {
			f.SizeAfter = c.After.Size
			f.NotStored = f.NotStored || c.After.NotStored
		}
		if c.Before != nil && c.After != nil && c.Before.Mode != c.After.Mode {
			f.ModeBefore, f.ModeAfter = "0"+strconv.FormatUint(uint64(c.Before.Mode), 8), "0"+strconv.FormatUint(uint64(c.After.Mode), 8)
		}
		added += f.Added
		deleted += f.Deleted
		files = append(files, f)
	}
	return files, added, deleted
}

// TurnRef names a turn: its thread and its input's entry there.
type TurnRef struct {
	Thread string
	Turn   int
}

// ChangesQuery asks for the changes of a turn (Turn set) or of the whole session.
type ChangesQuery struct {
	Turn *TurnRef
	// Diff bounds the patches; Paths keeps some files only.
	Diff snapshot.DiffOptions
}

// Changes is what a turn or the session changed, host by host.
type Changes struct {
	Turn    *TurnRef
	Undone  bool // the turn's changes were undone
	Running bool // the turn runs
	Hosts   []HostChanges
}

// HostChanges is what changed on one host; Err says why it is not known.
type HostChanges struct {
	Host string
	Dir  string
	Diff *snapshot.Diff
	Err  string
}

// ErrNoTurn reports a turn that the thread does not have.
var ErrNoTurn = errors.New("sessions: no such turn")

// span is what a turn (or the session) captured of one host: its first snapshot before
// and its last after.
type span struct {
	Host, Dir     string
	Before, After snapshot.ID
	Err           string
}

// turnSpans returns the captures of the turn whose input is entry start of th, host by
// host in the order they were first captured.
func turnSpans(th *Thread, start int) []span {
	end := len(th.Entries)
	for i := start + 1; i < len(th.Entries); i++ {
		if turnStart(th.Entries[i]) && !th.Entries[i].Rejected {
			end = i
			break
		}
	}
	var out []span
	for _, e := range th.Entries[start:end] {
		for _, c := range e.Snapshots {
			out = addSpan(out, c)
		}
	}
	return out
}

// addSpan adds capture c to the spans: the first before and the last after of its host.
func addSpan(out []span, c Capture) []span {
	for i := range out {
		if out[i].Host == c.Host {
			if out[i].Before == "" {
				out[i].Before = c.Before
			}
			if c.After != "" {
				out[i].After = c.After
			}
			if c.Dir != "" {
				out[i].Dir = c.Dir
			}
			if c.Error != "" && out[i].Err == "" {
				out[i].Err = c.Error
			}
			return out
		}
	}
	return append(out, span{Host: c.Host, Dir: c.Dir, Before: c.Before, After: c.After, Err: c.Error})
}

// sessionSpans returns, host by host, the first snapshot before any turn of the session's
// threads (in order).
func sessionSpans(s *Session) []span {
	var out []span
	for _, th := range s.Threads {
		for _, e := range th.Entries {
			for _, c := range e.Snapshots {
				out = addSpan(out, c)
			}
		}
	}
	return out
}

// isTurnStart reports whether entry i of th starts a turn.
func isTurnStart(th *Thread, i int) bool {
	return i >= 0 && i < len(th.Entries) && turnStart(th.Entries[i]) && !th.Entries[i].Rejected
}

// Changes returns what a turn of session id changed (from before its first tool batch to
// after its last), or what the whole session changed: from before its first captured
// batch to the files as they are now (a capture taken for the answer), what a commit of
// the session's work would hold.
func (m *Manager) Changes(ctx context.Context, id string, q ChangesQuery) (*Changes, error) {
	l, err := m.open(ctx, id)
	if err != nil {
		return nil, err
	}
	rt := l.rt
	if rt.snaps == nil {
		return nil, ErrNoSnapshots
	}
	var spans []span
	out := &Changes{Turn: q.Turn, Hosts: []HostChanges{}}
	var terr error
	rt.doc.view(func(s *Session) {
		if q.Turn == nil {
			spans = sessionSpans(s)
			return
		}
		th := s.Latest()
		if q.Turn.Thread != "" {
			th = s.Thread(q.Turn.Thread)
		}
		if th == nil || !isTurnStart(th, q.Turn.Turn) {
			terr = fmt.Errorf("session %s, thread %s, turn %d: %w", id, q.Turn.Thread, q.Turn.Turn, ErrNoTurn)
			return
		}
		out.Turn = &TurnRef{Thread: th.ID, Turn: q.Turn.Turn}
		spans = turnSpans(th, q.Turn.Turn)
		out.Undone = s.undone(th.ID, q.Turn.Turn)
		out.Running = th.open && th == s.Latest() && lastStart(th) == q.Turn.Turn
	})
	if terr != nil {
		return nil, terr
	}
	for _, sp := range spans {
		hc := HostChanges{Host: sp.Host, Dir: sp.Dir, Err: sp.Err}
		to := sp.After
		if q.Turn == nil && sp.Before != "" {
			ctx, cancel := context.WithTimeout(ctx, captureTimeout)
			res, err := rt.snaps.Capture(ctx, sp.Host, captureRequest(id, rt.dir, rt.snapOpts, sp.Host, nil))
			cancel()
			if err != nil {
				hc.Err = describeCapture(err)
				out.Hosts = append(out.Hosts, hc)
				continue
			}
			to = res.ID
		}
		if sp.Before == "" || to == "" {
			if hc.Err == "" {
				hc.Err = "the files of this host were not captured"
			}
			out.Hosts = append(out.Hosts, hc)
			continue
		}
		d, err := rt.snaps.Diff(ctx, sp.Host, sp.Before, to, q.Diff)
		if err != nil {
			hc.Err = describeCapture(err)
		} else {
			hc.Diff, hc.Err = d, ""
		}
		out.Hosts = append(out.Hosts, hc)
	}
	return out, nil
}

// lastStart returns the entry of th's last turn input, or -1.
func lastStart(th *Thread) int {
	for i := len(th.Entries) - 1; i >= 0; i-- {
		if isTurnStart(th, i) {
			return i
		}
	}
	return -1
}

// CapturesFiles reports whether the service captures its sessions' files: [snapshots] is
// on and its tools keep snapshots.
func (m *Manager) CapturesFiles() bool {
	_, ok := m.o.Tools.(Snapshotter)
	return ok && m.o.Snapshots.Enabled
}

// SnapshotSizer is a [Snapshotter] that says how much space the local store takes.
type SnapshotSizer interface {
	SnapshotSize() (int64, error)
}

// SnapshotSize returns the space the snapshots of the sessions' files take on this
// machine, in bytes; ok is false when they are not captured (or the size is unknown).
func (m *Manager) SnapshotSize() (size int64, ok bool) {
	sz, is := m.o.Tools.(SnapshotSizer)
	if !is || !m.CapturesFiles() {
		return 0, false
	}
	n, err := sz.SnapshotSize()
	if err != nil {
		m.log.Warn("the size of the snapshot store is unknown", "err", err)
		return 0, false
	}
	return n, true
}

// ErrNoSnapshots reports a session whose files are not captured: [snapshots] is off, or
// its tools have no store.
var ErrNoSnapshots = errors.New("sessions: this session's files are not captured")
