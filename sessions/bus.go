package sessions

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ringSize bounds the events kept per session for subscribers that reconnect or fall
// behind. Deltas are coalesced before they reach the ring (at most ~25 a second), so it holds
// a good minute of a busy turn.
const ringSize = 1024

// maxTombstones bounds the rings of closed sessions that are kept empty, to tell their
// subscribers that they missed events; beyond it the oldest go, and a subscriber from before
// them gets a reset for a session it cannot tell about.
const maxTombstones = 4096

// bus fans the updates of one [Manager] out to its subscribers. Each session keeps its newest
// updates in a bounded ring; a subscriber reads from the rings at its own pace, so the
// publisher never waits for one. A subscriber whose cursor fell out of a session's ring
// gets one reset update for that session instead of the events it missed. The rings are
// kept in the order of their newest update, so that a subscriber's read costs the sessions
// that changed since its cursor, not every session ever opened; a closed session's ring is
// kept for a while (forget), then emptied and its place kept as a tombstone.
type bus struct {
	boot string // this process's bus instance: cursors of another boot are unknown

	// mu guards the fields below: subscribers read them under RLock, at once (a profile
	// may have hundreds of streams, woken by every update), and writers take Lock.
	mu    sync.RWMutex
	seq   uint64 // the last sequence number handed out
	rings map[string]*ring
	// newest and oldest are the ends of the list of rings in the order of their last
	// update, newest first.
	newest, oldest *ring
	tombstones     int    // emptied rings still in rings
	floor          uint64 // the highest last update of the tombstones dropped
	subs           map[*Subscription]struct{}
	watched        map[string]int // session -> subscriptions to it by name
	// closed holds the rings of closed sessions that still keep updates, and closedBytes
	// what they hold (see closedring.go); grace and budget are closedGrace and
	// closedBudget, which tests change.
	closed      closedRings
	closedBytes int
	grace       time.Duration
	budget      int
}

// ring is the newest updates of one session (or of the profile, under ""), oldest first.
type ring struct {
	session    string
	buf        []Update
	head       int    // index of the oldest update in buf once it is full
	dropped    uint64 // the highest sequence number evicted, 0 for none
	lastSeq    uint64 // the newest update's sequence number, also once emptied
	prev, next *ring  // neighbours in the bus's recency list (prev is newer)
	closed     int    // its index in the bus's closed rings; -1 while its session is open
	size       int    // the bytes its updates hold, while closed
}

func (r *ring) add(u Update) {
	r.lastSeq = u.Seq
	if len(r.buf) < ringSize {
		r.buf = append(r.buf, u)
		return
	}
	r.dropped = r.buf[r.head].Seq
	r.buf[r.head] = u
	r.head = (r.head + 1) % ringSize
}

// at returns the i-th oldest update.
func (r *ring) at(i int) Update { return r.buf[(r.head+i)%len(r.buf)] }

// last returns the newest update's sequence number, 0 for none.
func (r *ring) last() uint64 { return r.lastSeq }

// after appends the updates with a sequence number above seq to out, in order.
func (r *ring) after(seq uint64, out []Update) []Update {
	for _, run := range r.runsAfter(seq, nil) {
		out = append(out, run...)
	}
	return out
}

// runsAfter appends to runs the updates with a sequence number above seq, in order, as at
// most two slices of the ring's buffer (it wraps around): valid while the bus's lock is
// held. The ring is in sequence order, so it finds the first by binary search.
func (r *ring) runsAfter(seq uint64, runs [][]Update) [][]Update {
	n := len(r.buf)
	i := sort.Search(n, func(i int) bool { return r.at(i).Seq > seq })
	if i == n {
		return runs
	}
	start := (r.head + i) % n
	end := r.head // one past the newest, in buf
	if end == 0 {
		end = n
	}
	if start < end {
		return append(runs, r.buf[start:end])
	}
	return append(runs, r.buf[start:], r.buf[:end])
}

func newBus() *bus {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &bus{boot: hex.EncodeToString(b[:]), rings: map[string]*ring{}, subs: map[*Subscription]struct{}{}, watched: map[string]int{},
		grace: closedGrace, budget: closedBudget}
}

// unlink takes r out of the recency list; call with b.mu held.
func (b *bus) unlink(r *ring) {
	if r.prev != nil {
		r.prev.next = r.next
	} else if b.newest == r {
		b.newest = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else if b.oldest == r {
		b.oldest = r.prev
	}
	r.prev, r.next = nil, nil
}

// front puts r first in the recency list; call with b.mu held.
func (b *bus) front(r *ring) {
	if b.newest == r {
		return
	}
	b.unlink(r)
	r.next = b.newest
	if b.newest != nil {
		b.newest.prev = r
	}
	b.newest = r
	if b.oldest == nil {
		b.oldest = r
	}
}

// publish gives u the next sequence number, keeps it in its session's ring and wakes the
// subscribers that want it. It never blocks on a subscriber.
func (b *bus) publish(u Update) Update {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	u.Seq = b.seq
	u.enc = &encoding{}
	r := b.rings[u.Session]
	switch {
	case r == nil:
		r = &ring{session: u.Session, closed: -1}
		b.rings[u.Session] = r
	case len(r.buf) == 0 && r.dropped > 0:
		b.tombstones-- // a closed session's ring in use again
	case r.closed >= 0:
		b.reopen(r)
	}
	r.add(u)
	b.front(r)
	for s := range b.subs {
		if s.wants(u.Session) {
			select {
			case s.notify <- struct{}{}:
			default:
			}
		}
	}
	return u
}

// forget lets go of the ring of session id, which was closed at now: its updates stay
// replayable for a grace period, within a budget (see closedring.go), and then a
// tombstone tells a subscriber that has not read them that it missed them (a reset). A
// session with a subscription of its own is not forgotten.
func (b *bus) forget(id string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.rings[id]
	if r == nil || id == "" || len(r.buf) == 0 || r.closed >= 0 || b.watched[id] > 0 {
		return
	}
	b.keep(r, now)
}

// watchers returns how many subscriptions name session id.
func (b *bus) watchers(id string) int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.watched[id]
}

// ID returns the event id of update seq: "<boot>-<seq>".
func (b *bus) id(seq uint64) string { return b.boot + "-" + strconv.FormatUint(seq, 10) }

// cursor parses an event id. known is false for an id of another boot or one that does not
// parse: its subscriber must start over from a snapshot.
func (b *bus) cursor(id string) (seq uint64, known bool) {
	boot, n, ok := strings.Cut(id, "-")
	if !ok || boot != b.boot {
		return 0, false
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return 0, false
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if seq > b.seq {
		return 0, false
	}
	return seq, true
}

// Subscription reads the updates of some sessions (or all) from a cursor on. It is not
// safe for concurrent use; Close it when done.
type Subscription struct {
	b        *bus
	sessions []string // nil means every session
	cursor   uint64
	reset    bool // the first Next reports a reset: the cursor was unknown
	exact    bool // deltas are delivered one by one, not coalesced
	notify   chan struct{}
	done     <-chan struct{} // closed when the service closed: Next then says so
}

// wants reports whether the subscription reads session's updates; profile-wide updates
// (session "") reach everyone.
func (s *Subscription) wants(session string) bool {
	return s.sessions == nil || session == "" || slices.Contains(s.sessions, session)
}

// Cursor returns the event id of the last update Next returned (or of the subscription's
// start): a subscriber that reconnects with it gets exactly what it missed.
func (s *Subscription) Cursor() string { return s.b.id(s.cursor) }

// Next waits for updates after the cursor and returns them in order, advancing the cursor.
// Unless the subscription is exact, consecutive deltas of one session are coalesced into
// one update carrying the last one's sequence number. For a session whose missed updates are no longer kept (or when the
// subscription started from an unknown cursor), Next returns one [UpdateReset] in their
// place. It returns ctx's error when ctx ends first.
func (s *Subscription) Next(ctx context.Context) ([]Update, error) {
	for {
		if out := s.take(); len(out) > 0 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-s.done:
			return nil, ErrShutdown
		case <-s.notify:
		}
	}
}

// take returns the updates after the cursor and advances it. It only reads the bus (the
// cursor and reset flag are the subscription's own, which one goroutine uses).
func (s *Subscription) take() []Update {
	b := s.b
	b.mu.RLock()
	defer b.mu.RUnlock()
	if s.cursor >= b.seq && !s.reset {
		return nil
	}
	var out []Update // the resets, in sequence order once sorted
	var runs [][]Update
	if s.reset || s.sessions == nil && s.cursor < b.floor {
		s.reset = false
		for _, id := range s.sessions {
			out = append(out, Update{Type: UpdateReset, Session: id, Seq: b.seq})
		}
		if s.sessions == nil {
			out = append(out, Update{Type: UpdateReset, Seq: b.seq})
		}
		s.cursor = b.seq
		return out
	}
	read := func(id string, r *ring) {
		switch {
		case r == nil:
			if s.cursor < b.floor && id != "" {
				// Its ring may have been a tombstone dropped since: it cannot be told.
				out = append(out, Update{Type: UpdateReset, Session: id, Seq: b.seq})
			}
		case r.last() <= s.cursor:
		case r.dropped > s.cursor && id != "":
			out = append(out, Update{Type: UpdateReset, Session: id, Seq: r.last()})
		default:
			runs = r.runsAfter(s.cursor, runs)
		}
	}
	if s.sessions == nil {
		for r := b.newest; r != nil && r.last() > s.cursor; r = r.next {
			read(r.session, r)
		}
	} else {
		for _, id := range s.sessions {
			read(id, b.rings[id])
		}
		read("", b.rings[""])
	}
	s.cursor = b.seq
	slices.SortFunc(out, func(x, y Update) int { return cmpSeq(x.Seq, y.Seq) })
	if len(out) > 0 {
		runs = append(runs, out)
	}
	out = merge(runs)
	if s.exact {
		return out
	}
	return coalesce(out)
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// coalesce merges runs of deltas of the same session and type into one update.
func coalesce(us []Update) []Update {
	out := us[:0]
	for _, u := range us {
		if n := len(out); n > 0 && u.delta() && out[n-1].Type == u.Type && out[n-1].Session == u.Session {
			out[n-1].Text += u.Text
			out[n-1].Seq = u.Seq
			out[n-1].enc = nil // no longer the published update
			continue
		}
		out = append(out, u)
	}
	return out
}

// Exact makes Next deliver every update on its own, deltas included, so that a client that
// counts or replays events sees each once (the JSON API); it returns s.
func (s *Subscription) Exact() *Subscription {
	s.exact = true
	return s
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if _, ok := s.b.subs[s]; !ok {
		return
	}
	delete(s.b.subs, s)
	for _, id := range s.sessions {
		if s.b.watched[id]--; s.b.watched[id] <= 0 {
			delete(s.b.watched, id)
		}
	}
}

// subscribe starts a subscription to sessions (nil for all) after the event id after: ""
// starts at the newest update; an id the bus does not know starts with a reset.
func (b *bus) subscribe(sessions []string, after string) *Subscription {
	if sessions != nil {
		sessions = slices.Compact(slices.Sorted(slices.Values(sessions)))
	}
	s := &Subscription{b: b, sessions: sessions, notify: make(chan struct{}, 1)}
	if after != "" {
		seq, known := b.cursor(after)
		s.cursor, s.reset = seq, !known
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if after == "" || s.reset {
		s.cursor = b.seq
	}
	b.subs[s] = struct{}{}
	for _, id := range sessions {
		b.watched[id]++
	}
	return s
}

// IDOf returns the event id of the update with sequence number seq.
func (s *Subscription) IDOf(seq uint64) string { return s.b.id(seq) }

// merge returns the updates of runs, each in sequence order, in one sequence order. It
// copies each update once: a reconnecting subscriber's read may take thousands, of
// hundreds of sessions, which sorting moved again and again.
func merge(runs [][]Update) []Update {
	n := 0
	for _, r := range runs {
		n += len(r)
	}
	if n == 0 {
		return nil
	}
	out := make([]Update, 0, n)
	if len(runs) == 1 {
		return append(out, runs[0]...)
	}
	h := runHeap(runs)
	heap.Init(&h)
	for len(h) > 0 {
		r := h[0]
		out = append(out, r[0])
		if len(r) == 1 {
			heap.Pop(&h)
			continue
		}
		h[0] = r[1:]
		heap.Fix(&h, 0)
	}
	return out
}

// runHeap is a min-heap of non-empty runs of updates by their first update.
type runHeap [][]Update

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return h[i][0].Seq < h[j][0].Seq }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.([]Update)) }
func (h *runHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}
