package sessions

import (
	"container/heap"
	"time"
	"unsafe"
)

// The rings of closed sessions. A session is closed to free its memory (see idle.go) right
// after a job ends when more than IdleKeep are idle, which is milliseconds after its last
// events: a stream that has not read them yet, or a client that reconnects with a cursor a
// few seconds old, must still get them. So a closed session's ring is kept, made compact,
// for closedGrace after it closed; a cursor younger than that never needs what is older. All
// the kept updates together are bounded by closedBudget bytes: beyond it the oldest updates
// go first, whichever closed session they are of, so that every closed session keeps the
// same recent span. A ring that lost all its updates is a tombstone (see bus.forget).
const (
	// closedGrace is how long a closed session's updates stay replayable.
	closedGrace = 2 * time.Minute
	// closedBudget bounds the bytes held by the updates of closed sessions, as
	// [Update.heapBytes] counts them (about 800 bytes for a delta or a state change): some
	// 5,000 updates, the last turn of a few hundred sessions.
	closedBudget = 4 << 20
)

// closedRings is a min-heap of the rings of closed sessions that still hold updates, by
// their oldest update: the next to go. Each ring of it is linear (head 0) and exactly as
// large as it holds.
type closedRings []*ring

func (h closedRings) Len() int           { return len(h) }
func (h closedRings) Less(i, j int) bool { return h[i].buf[0].Seq < h[j].buf[0].Seq }
func (h closedRings) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].closed, h[j].closed = i, j
}
func (h *closedRings) Push(x any) {
	r := x.(*ring)
	r.closed = len(*h)
	*h = append(*h, r)
}
func (h *closedRings) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	r.closed = -1
	return r
}

// updateBytes is the size of an update's struct.
const updateBytes = int(unsafe.Sizeof(Update{}))

// heapBytes is about what u holds in memory when kept in a closed ring: its struct, its
// strings and pointers (shared strings, such as the session id, are counted too), and the
// JSON a replay makes of it (once for every subscriber that replays it): the strings again
// and jsonBytes for the rest.
func (u *Update) heapBytes() int {
	strs := len(u.Thread) + len(u.Text) + len(u.Tool) + len(u.CallID) + len(u.Input) + len(u.Host) +
		len(u.Stop) + len(u.Error) + len(u.Code) + len(u.Detail) + len(u.From) + len(u.To) + len(u.Job) +
		len(u.JobID) + len(u.Model) + len(u.State) + len(u.Parent) + len(u.Child)
	n := updateBytes + 2*strs + jsonBytes
	if u.Usage != nil {
		n += int(unsafe.Sizeof(*u.Usage))
	}
	if u.Title != nil {
		n += 16 + 2*len(*u.Title)
	}
	if u.AcceptedAt != nil {
		n += int(unsafe.Sizeof(*u.AcceptedAt))
	}
	if u.Busy != nil {
		n += 8
	}
	if u.Archived != nil {
		n += 8
	}
	return n
}

// jsonBytes is about what an update's JSON holds beyond its strings: the field names, the
// time, the numbers, the buffer's slack.
const jsonBytes = 256

// keep keeps the ring of a session that was closed at now: its updates from the first of
// the last closedGrace on, copied into a buffer of their size. Their JSON, which the
// streams that sent them made, is let go: most are never replayed. Call with b.mu held.
func (b *bus) keep(r *ring, now time.Time) {
	horizon := now.Add(-b.grace)
	kept := make([]Update, 0, len(r.buf))
	for i := range len(r.buf) {
		u := r.at(i)
		if len(kept) == 0 && u.Time.Before(horizon) {
			r.dropped = u.Seq
			continue
		}
		u.enc = &encoding{}
		kept = append(kept, u)
	}
	r.buf, r.head = compact(kept), 0
	if len(r.buf) == 0 {
		b.bury(r)
		return
	}
	r.size = 0
	for i := range r.buf {
		r.size += r.buf[i].heapBytes()
	}
	b.closedBytes += r.size
	heap.Push(&b.closed, r)
	b.trimClosed(now)
}

// compact returns a copy of us in a buffer of its size, nil for none: what it holds is
// all it costs.
func compact(us []Update) []Update {
	if len(us) == 0 {
		return nil
	}
	c := make([]Update, len(us))
	copy(c, us)
	return c
}

// trimClosed lets go of the updates of closed sessions that are older than the grace
// period or beyond the budget, oldest first. Call with b.mu held.
func (b *bus) trimClosed(now time.Time) {
	horizon := now.Add(-b.grace)
	var touched []*ring
	for len(b.closed) > 0 {
		r := b.closed[0]
		u := &r.buf[0]
		if b.closedBytes <= b.budget && !u.Time.Before(horizon) {
			break
		}
		n := u.heapBytes()
		r.dropped = u.Seq
		*u = Update{}
		r.buf = r.buf[1:]
		r.size -= n
		b.closedBytes -= n
		if len(r.buf) == 0 {
			heap.Pop(&b.closed)
			b.bury(r)
			continue
		}
		heap.Fix(&b.closed, 0)
		if len(touched) == 0 || touched[len(touched)-1] != r {
			touched = append(touched, r)
		}
	}
	// The updates let go are zeroed; the memory of their structs is freed once the ring
	// is copied into a buffer of its size: a copy of at most one ring per closed session,
	// as keep's.
	for _, r := range touched {
		if len(r.buf) > 0 {
			r.buf = compact(r.buf)
		}
	}
}

// reopen takes ring r out of the closed rings: its session publishes again. Call with b.mu
// held.
func (b *bus) reopen(r *ring) {
	if r.closed < 0 {
		return
	}
	heap.Remove(&b.closed, r.closed)
	b.closedBytes -= r.size
	r.size = 0
}

// bury empties ring r, whose session was closed: its updates are let go, and it stays as a
// tombstone, its last sequence number, that tells a subscriber that has not read them that
// it missed them (a reset). Beyond maxTombstones the oldest tombstones go. Call with b.mu
// held.
func (b *bus) bury(r *ring) {
	r.buf, r.head, r.dropped = nil, 0, r.lastSeq
	b.tombstones++
	for t := b.oldest; b.tombstones > maxTombstones && t != nil; {
		prev := t.prev
		if len(t.buf) == 0 && t.dropped > 0 {
			b.floor = max(b.floor, t.lastSeq)
			b.unlink(t)
			delete(b.rings, t.session)
			b.tombstones--
		}
		t = prev
	}
}

// sweep lets go of the updates of closed sessions older than the grace period.
func (b *bus) sweep(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trimClosed(now)
}
