package sessions

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// notices publishes one notice update per session named, at now, and returns their
// sequence numbers.
func notices(b *bus, now time.Time, sessions ...string) []uint64 {
	var seqs []uint64
	for _, id := range sessions {
		seqs = append(seqs, b.publish(Update{Type: UpdateNotice, Session: id, Text: id, Time: now}).Seq)
	}
	return seqs
}

// read returns the updates a subscription takes, as "session:type:seq" strings.
func read(s *Subscription) []string {
	var out []string
	for _, u := range s.take() {
		out = append(out, fmt.Sprintf("%s:%s:%d", u.Session, u.Type, u.Seq))
	}
	return out
}

// TestBusClosedGrace (issue 28): a closed session's updates stay replayable for the grace
// period: a subscriber that had not read them, and one that comes back with a cursor from
// before them, gets them and no reset; the session's next update reopens its ring, with
// what it kept. After the grace period they go, and such a cursor gets a reset for it.
func TestBusClosedGrace(t *testing.T) {
	b := newBus()
	now := time.Now()
	live := b.subscribe(nil, "")
	notices(b, now, "a", "b", "a")
	b.forget("a", now)
	want := fmt.Sprint([]string{"a:notice:1", "b:notice:2", "a:notice:3"})
	if got := fmt.Sprint(read(live)); got != want {
		t.Errorf("a subscriber that had not read the closed session's updates read %s, want %s", got, want)
	}
	if got := fmt.Sprint(read(b.subscribe(nil, b.id(0)))); got != want {
		t.Errorf("a cursor from before the close read %s, want %s", got, want)
	}
	if len(b.closed) != 1 || b.closedBytes == 0 {
		t.Errorf("%d closed rings holding %d bytes, want a's", len(b.closed), b.closedBytes)
	}

	notices(b, now, "a") // a opened again
	if len(b.closed) != 0 || b.closedBytes != 0 {
		t.Errorf("after a's next update: %d closed rings holding %d bytes, want none", len(b.closed), b.closedBytes)
	}
	named := b.subscribe([]string{"a"}, b.id(0))
	if got, want := fmt.Sprint(read(named)), fmt.Sprint([]string{"a:notice:1", "a:notice:3", "a:notice:4"}); got != want {
		t.Errorf("the reopened session's subscriber read %s, want %s", got, want)
	}
	named.Close()

	b.forget("a", now)
	b.sweep(now.Add(closedGrace + time.Second))
	if got, want := fmt.Sprint(read(b.subscribe(nil, b.id(0)))), fmt.Sprint([]string{"b:notice:2", "a:reset:4"}); got != want {
		t.Errorf("after the grace period a cursor from before read %s, want %s", got, want)
	}
	if len(b.closed) != 0 || b.closedBytes != 0 {
		t.Errorf("after the grace period: %d closed rings holding %d bytes, want none", len(b.closed), b.closedBytes)
	}
	if got := read(b.subscribe(nil, b.id(4))); len(got) != 0 {
		t.Errorf("a cursor from after the session's last update read %v, want nothing", got)
	}
}

// TestBusClosedBudget (issue 28): the updates kept for closed sessions stay within the
// budget, the oldest going first whichever session they are of: a cursor newer than the
// oldest one kept replays without a reset, an older one gets a reset for each session that
// lost updates after it. Each kept ring is exactly as large as it holds.
func TestBusClosedBudget(t *testing.T) {
	b := newBus()
	u := Update{Type: UpdateNotice, Session: "s0", Text: "s0"}
	b.budget = 3 * u.heapBytes()
	now := time.Now()
	for i := range 5 {
		id := fmt.Sprintf("s%d", i)
		notices(b, now, id, id) // s0: 1, 2; s1: 3, 4; ... s4: 9, 10
		b.forget(id, now)
		if b.closedBytes > b.budget {
			t.Fatalf("after closing %s: %d bytes kept, over the budget of %d", id, b.closedBytes, b.budget)
		}
	}
	total := 0
	for _, r := range b.closed {
		if cap(r.buf) != len(r.buf) {
			t.Errorf("closed ring %s holds %d updates in a buffer of %d", r.session, len(r.buf), cap(r.buf))
		}
		total += len(r.buf)
	}
	if total != 3 {
		t.Errorf("%d updates kept, want the newest 3", total)
	}
	if got, want := fmt.Sprint(read(b.subscribe(nil, b.id(7)))), fmt.Sprint([]string{"s3:notice:8", "s4:notice:9", "s4:notice:10"}); got != want {
		t.Errorf("a cursor newer than the oldest kept update read %s, want %s", got, want)
	}
	want := fmt.Sprint([]string{"s0:reset:2", "s1:reset:4", "s2:reset:6", "s3:reset:8", "s4:notice:9", "s4:notice:10"})
	if got := fmt.Sprint(read(b.subscribe(nil, b.id(0)))); got != want {
		t.Errorf("a cursor from before every update read %s, want %s", got, want)
	}
}

// TestBusReplayModel (issue 28) checks the bus against a model of what it promises: a
// subscription from any cursor gets, for each session, either exactly its updates after the
// cursor, in order, or a reset, and no reset for a cursor the bus keeps everything after;
// with rings that wrap around, sessions closed and reopened, and a budget that makes closed
// rings lose their oldest updates.
func TestBusReplayModel(t *testing.T) {
	b := newBus()
	u := Update{Type: UpdateNotice, Session: "s0", Text: "x"}
	b.budget = 400 * u.heapBytes()
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now()
	var all []Update
	// Three sessions and 9,000 updates, a close every few hundred: the rings wrap around
	// while open, and closed ones lose updates to the budget.
	for step := range 9000 {
		id := fmt.Sprintf("s%d", rng.IntN(3))
		all = append(all, b.publish(Update{Type: UpdateNotice, Session: id, Text: "x", Time: now}))
		if rng.IntN(400) == 0 {
			b.forget(fmt.Sprintf("s%d", rng.IntN(3)), now)
		}
		if step%300 != 299 {
			continue
		}
		for range 10 {
			cursor := uint64(rng.IntN(len(all) + 1))
			sub := b.subscribe(nil, b.id(cursor)).Exact()
			got := sub.take()
			sub.Close()
			reset := map[string]bool{}
			per := map[string][]uint64{}
			for i, u := range got {
				if i > 0 && u.Seq <= got[i-1].Seq {
					t.Fatalf("from cursor %d: update %d after %d", cursor, u.Seq, got[i-1].Seq)
				}
				if u.Type == UpdateReset {
					reset[u.Session] = true
				} else {
					per[u.Session] = append(per[u.Session], u.Seq)
				}
			}
			want := map[string][]uint64{}
			for _, u := range all[cursor:] {
				want[u.Session] = append(want[u.Session], u.Seq)
			}
			for id, seqs := range want {
				if !reset[id] && !slices.Equal(per[id], seqs) {
					t.Fatalf("from cursor %d of %d: session %s read %d updates without a reset, want %d", cursor, len(all), id, len(per[id]), len(seqs))
				}
			}
			// The newest 300 updates are within every ring and within the budget.
			if len(reset) > 0 && int(cursor) >= len(all)-300 {
				t.Fatalf("from cursor %d of %d: resets for %v, which the bus still keeps", cursor, len(all), reset)
			}
		}
	}
}
