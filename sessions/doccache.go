package sessions

import (
	"container/list"
	"context"
	"maps"
	"sync"
)

// The documents a [Manager] keeps of sessions that are not open: those read for viewing (a
// snapshot of a closed session), and those of sessions it closed, as they were when closed.
// A session that reopens, or is viewed, takes its document from here when its file has not
// changed since, instead of reading the whole log again: the cost of a reopen does not grow
// with the session's history. The cache is bounded in documents and in the bytes of their
// files (a document in memory is of the order of its file), the least recently used going
// first.
const (
	docCacheEntries = 128
	docCacheBytes   = 8 << 20
)

// loaded is a session's document and the file it was read from or last wrote.
type loaded struct {
	sess *Session // never changed: readers clone it, a reopen takes a copy (own)
	file fileState
	// owner is the tool-resource owner of the runtime of a session closed for being idle,
	// which held no tool handle: its next runtime takes the same owner, since nothing of
	// the earlier one was lost, so the model is not told of a new runtime on every reopen
	// (a note of some 500 bytes in each turn of a session closed between its turns).
	owner string
}

// docCache is the least recently used documents of sessions that are not open. It is safe
// for concurrent use.
type docCache struct {
	maxEntries int
	maxBytes   int64

	mu    sync.Mutex // guards the fields below
	byID  map[string]*list.Element
	order list.List // of *cached, most recently used first
	bytes int64     // the sizes of their files
}

type cached struct {
	id string
	loaded
}

func newDocCache(entries int, bytes int64) *docCache {
	return &docCache{maxEntries: entries, maxBytes: bytes, byID: map[string]*list.Element{}}
}

// get returns the document of session id, if kept.
func (c *docCache) get(id string) (loaded, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byID[id]
	if e == nil {
		return loaded{}, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cached).loaded, true
}

// put keeps l as the document of session id, letting go of the least recently used ones
// beyond the bounds. A document larger than the whole cache is not kept. A document read
// for viewing (no owner) keeps the owner of the one it replaces when both match the same
// file: a view that read the file while the session was being closed must not make its
// next runtime a new one.
func (c *docCache) put(id string, l loaded) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byID[id]; e != nil && l.owner == "" {
		if old := e.Value.(*cached).loaded; old.file.same(l.file) {
			l.owner = old.owner
		}
	}
	c.removeLocked(id)
	if l.file.size > c.maxBytes {
		return
	}
	c.byID[id] = c.order.PushFront(&cached{id: id, loaded: l})
	c.bytes += l.file.size
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.removeLocked(c.order.Back().Value.(*cached).id)
	}
}

// drop lets go of the document of session id.
func (c *docCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(id)
}

func (c *docCache) removeLocked(id string) {
	e := c.byID[id]
	if e == nil {
		return
	}
	c.bytes -= e.Value.(*cached).file.size
	c.order.Remove(e)
	delete(c.byID, id)
}

// own returns a copy of the session that a document may change: its own threads, entries
// and bookkeeping, sharing message contents (never changed in place). It costs a copy of
// each thread's entry list, not a decoding of the log.
func (s *Session) own() *Session {
	cp := s.clone()
	for i, t := range s.Threads {
		c := cp.Threads[i]
		c.intents, c.results, c.progress, c.partial = maps.Clone(t.intents), maps.Clone(t.results), maps.Clone(t.progress), t.partial
	}
	return cp
}

// kept returns a copy of the document, and the file it matches, for the manager to keep
// once the session is closed.
func (d *document) kept() loaded {
	d.mu.Lock()
	defer d.mu.Unlock()
	return loaded{sess: d.sess.own(), file: d.file}
}

// openDocument returns session id's document for a runtime: a copy of the one kept of it
// when its file has not changed since, with the owner its runtime may take again (see
// loaded), else read from the file.
func (m *Manager) openDocument(ctx context.Context, id string) (doc *document, owner string, err error) {
	if c, ok := m.docs.get(id); ok && !m.o.Store.changed(id, c.file) {
		return &document{store: m.o.Store, id: id, sess: c.sess.own(), file: c.file}, c.owner, nil
	}
	doc, err = openDocument(ctx, m.o.Store, id)
	return doc, "", err
}
