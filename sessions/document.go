package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"myco.dev/agent/model"
)

// document is the one owner of a session's in-memory document: it holds the [Session] and
// the lock that guards it, and everything that changes the document (a turn's input,
// checkpoints, tool intents and results, turn ends, new threads, metadata, a reload after
// another writer) is one of its methods. Each change is written first and made in memory
// only when the write succeeded (a document of an older schema is written whole from
// memory, so there the change is made first, under the lock, and undone if the write
// fails). Readers read under its lock ([document.view]) or get a copy
// ([document.snapshot]); the [Store] only writes the records it is given.
//
// Every write of a change happens with the session's writer gate held (see
// [Store.lockSession]); the document's lock orders the writes of one turn's concurrent
// tool calls and keeps readers from seeing a change half made. It is safe for concurrent
// use.
type document struct {
	store *Store
	id    string // the session's id, which never changes

	mu   sync.Mutex // guards the fields below and everything reachable from sess (threads, entries, bookkeeping)
	sess *Session
	file fileState // what sess was read from or last wrote, to notice another writer
}

// openDocument loads session id from store into a document.
func openDocument(ctx context.Context, store *Store, id string) (*document, error) {
	sess, file, err := store.load(ctx, id)
	if err != nil {
		return nil, err
	}
	return &document{store: store, id: id, sess: sess, file: file}, nil
}

// view calls f with the document while no change is made to it. f must not change the
// session, nor keep it or anything reachable from it after it returns; a [Thread] pointer
// may be kept as a handle for the document's methods.
func (d *document) view(f func(*Session)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(d.sess)
}

// snapshot returns a copy of the document that is safe to read while work goes on.
func (d *document) snapshot() *Session {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sess.clone()
}

// latest returns the thread that accepts new messages, as a handle for the other methods.
func (d *document) latest() *Thread {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sess.Latest()
}

// copyOf returns a copy of thread th, to read without the lock.
func (d *document) copyOf(th *Thread) *Thread {
	d.mu.Lock()
	defer d.mu.Unlock()
	return th.clone()
}

// history returns thread th as model input ([Thread.History]).
func (d *document) history(th *Thread) []model.Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	return th.History()
}

// nextThreadID returns an id no thread of the session has.
func (d *document) nextThreadID() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for n := len(d.sess.Threads) + 1; ; n++ {
		id := fmt.Sprintf("t%d", n)
		if d.sess.Thread(id) == nil {
			return id
		}
	}
}

// write appends recs to the file. The bytes written and synced are the file's from then
// on, also when the write then failed (its close did).
func (d *document) write(recs ...record) error {
	n, err := d.store.appendRecords(d.id, recs...)
	d.file.size += n
	return err
}

// rewrite writes the whole document as a fresh version 5 log, which it then is: every
// entry is on disk.
func (d *document) rewrite() error {
	f, err := d.store.rewrite(d.id, wholeRecords(d.sess))
	if err != nil {
		return err
	}
	d.file = f
	for _, t := range d.sess.Threads {
		t.saved = len(t.Entries)
	}
	d.sess.Upgraded = 0
	return nil
}

// checkpoint durably appends entries to thread th, together with any entries that recovery
// made on load and that are not on disk yet, and, when usage is not nil, the thread's latest
// usage report, in one write. It returns the number of th's entries after it. On error the
// document is left unchanged.
func (d *document) checkpoint(ctx context.Context, th *Thread, entries []Entry, usage *model.Usage) (int, error) {
	return d.checkpointBy(ctx, th, entries, usage, "")
}

// checkpointBy is checkpoint with the catalog key of the model whose response usage
// reports, which prices it.
func (d *document) checkpointBy(ctx context.Context, th *Thread, entries []Entry, usage *model.Usage, modelKey string) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var rec *usageRec
	if usage != nil {
		rec = &usageRec{Thread: th.ID, Usage: *usage, Model: modelKey}
	}
	err := d.checkpointLocked(th, entries, rec)
	return len(th.Entries), err
}

// checkpointMeta is checkpoint of one entry, and of the metadata change meta makes (nil
// for none; it gets a copy of the session and may leave it as it is), in one write.
func (d *document) checkpointMeta(ctx context.Context, th *Thread, e Entry, meta func(*Session)) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var rec *metaRec
	if meta != nil {
		cp := *d.sess
		cp.Links, cp.Actions, cp.Queue = slices.Clone(cp.Links), slices.Clone(cp.Actions), slices.Clone(cp.Queue)
		cp.Rules, cp.Approvals = slices.Clone(cp.Rules), slices.Clone(cp.Approvals)
		meta(&cp)
		if m := metaOf(&cp); !sameMeta(m, metaOf(d.sess)) {
			rec = m
		}
	}
	if rec == nil {
		err := d.checkpointLocked(th, []Entry{e}, nil)
		return len(th.Entries), err
	}
	before := metaOf(d.sess)
	if d.sess.Upgraded != 0 {
		d.sess.setMeta(rec)
		if err := d.upgrade(th, []Entry{e}, nil); err != nil {
			d.sess.setMeta(before)
			return len(th.Entries), err
		}
		return len(th.Entries), nil
	}
	err := d.checkpointLocked(th, []Entry{e}, nil, record{Kind: "session", Session: rec})
	if err == nil {
		d.sess.setMeta(rec)
	}
	return len(th.Entries), err
}

// sameMeta reports whether two metadata records say the same.
func sameMeta(a, b *metaRec) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// checkpointLocked writes the entries recovery made, entries and usage to th, after the
// records pre, in one write. Call it with d.mu held.
func (d *document) checkpointLocked(th *Thread, entries []Entry, usage *usageRec, pre ...record) error {
	if d.sess.Upgraded != 0 {
		var u *model.Usage
		if usage != nil {
			u = &usage.Usage
		}
		return d.upgrade(th, entries, u)
	}
	pending := th.Entries[th.saved:]
	if len(pending)+len(entries)+len(pre) == 0 && usage == nil {
		return nil
	}
	recs := make([]record, 0, len(pre)+len(pending)+len(entries)+1)
	recs = append(recs, pre...)
	for i, e := range pending {
		recs = append(recs, record{Kind: "message", Message: &msgRec{Thread: th.ID, Index: th.saved + i, Entry: e}})
	}
	for i, e := range entries {
		recs = append(recs, record{Kind: "message", Message: &msgRec{Thread: th.ID, Index: len(th.Entries) + i, Entry: e}})
	}
	if usage != nil {
		recs = append(recs, record{Kind: "usage", Usage: usage})
	}
	if err := d.write(recs...); err != nil {
		return err
	}
	th.Entries = append(th.Entries, entries...)
	th.saved = len(th.Entries)
	if usage != nil {
		th.Usage = usage.Usage
		th.addSpent(usage.Model, usage.Usage)
	}
	for _, e := range entries {
		th.noteEntry(e)
		d.sess.noteCaptures(e)
	}
	return nil
}

// upgrade rewrites a session loaded from an older schema as a version 5 log, with entries
// and usage added to thread th, keeping the old file next to it as ID.session.vN. Call it
// with d.mu held; on error the document is left unchanged.
func (d *document) upgrade(th *Thread, entries []Entry, usage *model.Usage) error {
	from := d.sess.Upgraded
	if err := d.store.keepOld(d.id, from); err != nil {
		return fmt.Errorf("upgrade session %s: keep the version %d file: %w", d.id, from, err)
	}
	// The whole document is written from memory: the additions go in first, and out again
	// if the write fails. Nobody sees them meanwhile, since d.mu is held.
	before, usageBefore := len(th.Entries), th.Usage
	th.Entries = append(th.Entries, entries...)
	if usage != nil {
		th.Usage = *usage
	}
	if err := d.rewrite(); err != nil {
		th.Entries, th.Usage = th.Entries[:before], usageBefore
		return fmt.Errorf("upgrade session %s from version %d: %w", d.id, from, err)
	}
	for _, e := range entries {
		th.noteEntry(e)
		d.sess.noteCaptures(e)
	}
	return nil
}

// amend adds parts to the last entry of thread th (hidden notes added to the latest input
// or tool result before a model request) and makes the change durable: the entry is
// rewritten in place by a record at its index. On error the document is left unchanged.
func (d *document) amend(ctx context.Context, th *Thread, parts []model.Part) error {
	if len(parts) == 0 {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(th.Entries)
	if n == 0 {
		return fmt.Errorf("amend thread %s: the thread is empty", th.ID)
	}
	old := th.Entries[n-1]
	e := old
	e.Message.Parts = append(append([]model.Part(nil), old.Message.Parts...), parts...)
	if d.sess.Upgraded != 0 || th.saved < n {
		// The entry is not on disk as a version 5 record yet: the write that puts it there
		// carries the amendment.
		th.Entries[n-1] = e
		if err := d.checkpointLocked(th, nil, nil); err != nil {
			th.Entries[n-1] = old
			return err
		}
		return nil
	}
	if err := d.write(record{Kind: "message", Message: &msgRec{Thread: th.ID, Index: n - 1, Entry: e}}); err != nil {
		return err
	}
	th.Entries[n-1] = e
	return nil
}

// endTurn durably records how the current turn of thread th ended: one of [TurnDone],
// [TurnCancelled], [TurnFailed], [TurnRejected] or [TurnCompacted], with, for an end that
// is not an answer, its code and what a person is told. Entries recovery made are written
// first.
func (d *document) endTurn(ctx context.Context, th *Thread, status string, f Failure) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	rec := &turnRec{Thread: th.ID, Status: status, At: time.Now().UTC(), Code: f.Code, Error: f.Message, Detail: f.Detail}
	if err := d.checkpointLocked(th, nil, nil); err != nil {
		return err
	}
	if err := d.write(record{Kind: "turn", Turn: rec}); err != nil {
		return err
	}
	th.open, th.end = false, status
	th.ends = append(th.ends, rec.end(len(th.Entries)))
	return nil
}

// startThread durably starts thread nt as the successor of the latest thread. nt.Entries
// are its first messages; inherit, when positive, says that they begin with that many
// leading entries of the predecessor, which are then not written again. nt.Usage, when set,
// is carried over (its context use, not spent again). nt's bookkeeping must be set: readers
// may see it as soon as it is in the document, which owns it from then on.
func (d *document) startThread(ctx context.Context, nt *Thread, inherit int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	prev := d.sess.Latest()
	if prev == nil {
		return fmt.Errorf("start thread in session %s: the session has no thread", d.id)
	}
	if d.sess.Thread(nt.ID) != nil {
		return fmt.Errorf("start thread in session %s: thread %q exists", d.id, nt.ID)
	}
	if inherit < 0 || inherit > len(prev.Entries) || inherit > len(nt.Entries) {
		return fmt.Errorf("start thread in session %s: cannot inherit %d entries", d.id, inherit)
	}
	nt.Predecessor = prev.ID
	nt.Base = len(nt.Entries)
	if d.sess.Upgraded != 0 {
		d.sess.Threads = append(d.sess.Threads, nt)
		prev.Successor = nt.ID
		if err := d.upgrade(nt, nil, nil); err != nil {
			d.sess.Threads = d.sess.Threads[:len(d.sess.Threads)-1]
			prev.Successor = ""
			return err
		}
		return nil
	}
	if err := d.checkpointLocked(prev, nil, nil); err != nil { // recovered entries first
		return err
	}
	recs := []record{{Kind: "thread", Thread: &threadRec{ID: nt.ID, Created: nt.Created, Predecessor: prev.ID, Reason: nt.Reason, Inherit: inherit, Base: nt.Base}}}
	for i := inherit; i < len(nt.Entries); i++ {
		recs = append(recs, record{Kind: "message", Message: &msgRec{Thread: nt.ID, Index: i, Entry: nt.Entries[i]}})
	}
	if nt.Usage != (model.Usage{}) {
		recs = append(recs, record{Kind: "usage", Usage: &usageRec{Thread: nt.ID, Usage: nt.Usage, Carried: true}})
	}
	if err := d.write(recs...); err != nil {
		return err
	}
	nt.saved = len(nt.Entries)
	prev.Successor = nt.ID
	d.sess.Threads = append(d.sess.Threads, nt)
	return nil
}

// recordIntent durably records that a tool call of thread th is about to run. A document
// of an older schema writes none: the checkpoint before any tool runs rewrote it.
func (d *document) recordIntent(th *Thread, in *intentRec) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sess.Upgraded == 0 {
		if err := d.write(record{Kind: "intent", Intent: in}); err != nil {
			return err
		}
	}
	th.noteCall(in.Call.ID, in.Host, in.Started, time.Time{})
	return nil
}

// recordResult durably records a tool call's result in thread th.
func (d *document) recordResult(th *Thread, rec *resultRec) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sess.Upgraded == 0 {
		if err := d.write(record{Kind: "result", Result: rec}); err != nil {
			return err
		}
	}
	th.noteCall(rec.Result.CallID, "", time.Time{}, rec.Finished)
	return nil
}

// recordProgress durably records the newest output of a running tool call.
func (d *document) recordProgress(rec *progressRec) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sess.Upgraded != 0 {
		return nil
	}
	return d.write(record{Kind: "progress", Progress: rec})
}

// recordPartial durably records what has streamed of the answer being written.
func (d *document) recordPartial(rec *partialRec) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sess.Upgraded != 0 {
		return nil
	}
	return d.write(record{Kind: "partial", Partial: rec})
}

// updateMeta changes the session's metadata with f and saves it. f gets a copy of the
// session and must change metadata only (title, links, scratchpad, archive status, model
// choice, action records); what it changed is saved, and then set in the document. On
// error the document is left unchanged.
func (d *document) updateMeta(ctx context.Context, f func(*Session)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	cp := *d.sess
	cp.Links, cp.Actions, cp.Queue = slices.Clone(cp.Links), slices.Clone(cp.Actions), slices.Clone(cp.Queue)
	f(&cp)
	meta := metaOf(&cp)
	if d.sess.Upgraded != 0 {
		before := metaOf(d.sess)
		d.sess.setMeta(meta)
		if err := d.upgrade(d.sess.Latest(), nil, nil); err != nil {
			d.sess.setMeta(before)
			return err
		}
		return nil
	}
	if err := d.write(record{Kind: "session", Session: meta}); err != nil {
		return err
	}
	d.sess.setMeta(meta)
	return nil
}

// reload reads the document again when another writer changed its file since it was read
// or last written. Call it with the session's writer gate held, and with no thread handle
// kept: the threads are new ones.
func (d *document) reload(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	fresh, file, err := d.store.reload(ctx, d.id, d.file)
	if err != nil || fresh == nil {
		return err
	}
	d.sess, d.file = fresh, file
	return nil
}

// reopen reads the document again from its file, whatever this document holds, cutting
// off a torn last write: after a failed save, the file is the truth. Call it with the
// session's writer gate held, and with no thread handle kept.
func (d *document) reopen(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	fresh, file, err := d.store.reload(ctx, d.id, fileState{})
	if err != nil {
		return err
	}
	d.sess, d.file = fresh, file
	return nil
}

// changedOnDisk reports whether the file is no longer what the document was read from or
// last wrote.
func (d *document) changedOnDisk() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.store.changed(d.id, d.file)
}
