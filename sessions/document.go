package sessions

import (
	"context"
	"fmt"
	"sync"
	"time"

	"myco.dev/agent/model"
)

// document is the one owner of a session's in-memory document: it holds the [Session] and
// the lock that guards it, and everything that changes the document (a turn's input,
// checkpoints, tool intents and results, turn ends, new threads, metadata, a reload after
// another writer) is one of its methods. Each change is written first and made in memory
// only when the write succeeded. Readers read under its lock ([document.view]) or get a
// copy ([document.snapshot]).
//
// Every write of a change happens with the session's writer gate held (see
// [Store.lockSession]); the document's lock orders the writes of one turn's concurrent
// tool calls and keeps readers from seeing a change half made. It is safe for concurrent
// use.
type document struct {
	store *Store
	id    string // the session's id, which never changes

	mu   sync.Mutex // guards sess and everything reachable from it: threads, entries, bookkeeping
	sess *Session
}

func newDocument(store *Store, sess *Session) *document {
	return &document{store: store, id: sess.ID, sess: sess}
}

// view calls f with the document while no change is made to it. f must not keep the
// session or anything reachable from it after it returns; a [Thread] pointer may be kept
// as a handle for the document's methods.
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

// checkpoint durably appends entries to thread th, together with any entries that recovery
// made on load and that are not on disk yet, and, when usage is not nil, the thread's latest
// usage report, in one write. It returns the number of th's entries after it. On error the
// document is left unchanged.
func (d *document) checkpoint(ctx context.Context, th *Thread, entries []Entry, usage *model.Usage) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.store.Checkpoint(ctx, d.sess, th, entries, usage); err != nil {
		return len(th.Entries), err
	}
	return len(th.Entries), nil
}

// amend adds parts to the last entry of thread th (hidden notes added to the latest input
// or tool result before a model request) and makes the change durable. On error the
// document is left unchanged.
func (d *document) amend(ctx context.Context, th *Thread, parts []model.Part) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.store.Amend(ctx, d.sess, th, parts)
}

// endTurn durably records how the current turn of thread th ended: one of [TurnDone],
// [TurnCancelled], [TurnFailed], [TurnRejected] or [TurnCompacted].
func (d *document) endTurn(ctx context.Context, th *Thread, status string, cause error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.store.EndTurn(ctx, d.sess, th, status, cause)
}

// startThread durably starts thread nt as the successor of the latest thread. nt.Entries
// are its first messages; inherit, when positive, says that they begin with that many
// leading entries of the predecessor, which are then not written again. nt's bookkeeping
// must be set: readers may see it as soon as it is in the document.
func (d *document) startThread(ctx context.Context, nt *Thread, inherit int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.store.StartThread(ctx, d.sess, nt, inherit)
}

// recordIntent durably records that a tool call of thread th is about to run.
func (d *document) recordIntent(th *Thread, in *intentRec) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.store.recordIntent(d.sess, in); err != nil {
		return err
	}
	th.noteCall(in.Call.ID, in.Host, in.Started, time.Time{})
	return nil
}

// recordResult durably records a tool call's result in thread th.
func (d *document) recordResult(th *Thread, rec *resultRec) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.store.recordResult(d.sess, rec); err != nil {
		return err
	}
	th.noteCall(rec.Result.CallID, "", time.Time{}, rec.Finished)
	return nil
}

// recordProgress durably records the newest output of a running tool call.
func (d *document) recordProgress(rec *progressRec) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.store.recordProgress(d.sess, rec)
}

// updateMeta changes the session's metadata with f and saves it. f must change metadata
// only (title, links, scratchpad, archive status, model choice, action records). On error
// the metadata is left as it was.
func (d *document) updateMeta(ctx context.Context, f func(*Session)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.sess
	before := metaOf(s)
	f(s)
	if err := d.store.SaveMeta(ctx, s); err != nil {
		s.Title, s.Links, s.Scratchpad, s.Archived, s.Hidden = before.Title, before.Links, before.Scratchpad, before.Archived, before.Hidden
		s.Selected, s.Actions = before.Selected, before.Actions
		return err
	}
	return nil
}

// reload reads the document again when another writer changed its file since it was read
// or last written. Call it with the session's writer gate held.
func (d *document) reload(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	fresh, err := d.store.reload(ctx, d.sess)
	if err != nil || fresh == nil {
		return err
	}
	mu := d.store.lock(d.id)
	mu.Lock()
	*d.sess = *fresh
	mu.Unlock()
	return nil
}

// changedOnDisk reports whether the file is no longer what the document was read from or
// last wrote.
func (d *document) changedOnDisk() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.store.changedOnDisk(d.sess)
}
