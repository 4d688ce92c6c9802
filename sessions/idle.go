package sessions

import (
	"context"
	"slices"
	"time"
)

// touch records that the live session was used now.
func (l *live) touch() {
	l.mu.Lock()
	l.used = time.Now()
	l.mu.Unlock()
}

// closeIdleEvery closes idle sessions every period, and when kicked, until ctx ends.
func (m *Manager) closeIdleEvery(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.kick:
		}
		m.closeIdle(ctx, time.Now())
	}
}

// closeIdle closes the open sessions that are idle (no job, no subscription of their own,
// no live tool handle) since longer than IdleClose, and the least recently used idle ones
// beyond IdleKeep. A closed session's runtime is let go, its document is kept among a
// bounded few (see doccache.go) and its event ring for a grace period (see closedring.go),
// so that memory and the cost of a turn do not grow with the sessions ever opened; it
// reopens when next used, with its history (its live tools, which it has none of, stay
// gone): from the kept document while its file is unchanged, else from disk. Calls are one
// at a time, so that one returns after what another closed is kept.
func (m *Manager) closeIdle(ctx context.Context, now time.Time) {
	m.idleMu.Lock()
	defer m.idleMu.Unlock()
	m.mu.Lock()
	lives := make([]*live, 0, len(m.live))
	for _, l := range m.live {
		lives = append(lives, l)
	}
	m.mu.Unlock()
	type cand struct {
		l    *live
		used time.Time
	}
	var idle []cand
	for _, l := range lives {
		l.mu.Lock()
		// A session whose last turn's end lives only in memory (its save failed) stays, so
		// that its snapshot keeps telling it.
		free, used := l.job == nil && !l.closed && l.failed == nil, l.used
		l.mu.Unlock()
		if free && l.rt.Err() == nil && m.bus.watchers(l.id) == 0 && !l.rt.holdsTools(ctx) {
			idle = append(idle, cand{l, used})
		}
	}
	slices.SortFunc(idle, func(a, b cand) int { return a.used.Compare(b.used) })
	for i, c := range idle {
		if now.Sub(c.used) >= m.o.IdleClose || len(idle)-i > m.o.IdleKeep {
			m.closeIfIdle(c.l, c.used, now)
		}
	}
	m.bus.sweep(now)
}

// closeIfIdle closes live session l, at now, if it is still idle and unused since used.
func (m *Manager) closeIfIdle(l *live, used, now time.Time) {
	l.mu.Lock()
	if l.job != nil || l.closed || l.used.After(used) {
		l.mu.Unlock()
		return
	}
	l.closed = true // a job that opened it meanwhile opens it again (errLiveClosed)
	l.mu.Unlock()
	m.mu.Lock()
	if m.live[l.id] == l {
		delete(m.live, l.id)
	}
	m.mu.Unlock()
	l.close()
	// What it reopens from, unless its file changes meanwhile; it held no tool handle,
	// so its next runtime is this one's owner again.
	k := l.rt.doc.kept()
	k.owner = l.rt.owner
	m.docs.put(l.id, k)
	m.bus.forget(l.id, now)
}

// idleCheck asks for the least recently used idle sessions beyond IdleKeep to be closed
// now, after a job ended: a server that opens many sessions does not wait for the ticker.
func (m *Manager) idleCheck() {
	if m.o.IdleClose < 0 {
		return
	}
	m.mu.Lock()
	n := len(m.live)
	m.mu.Unlock()
	if n > m.o.IdleKeep {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
}

// Running reports whether a job runs on any session in this process.
func (m *Manager) Running() bool {
	m.mu.Lock()
	ls := make([]*live, 0, len(m.live))
	for _, l := range m.live {
		ls = append(ls, l)
	}
	m.mu.Unlock()
	for _, l := range ls {
		l.mu.Lock()
		busy := l.job != nil
		l.mu.Unlock()
		if busy {
			return true
		}
	}
	return false
}

// Occupancy returns how many sessions are open in this process (loaded, with a runtime,
// until they idle out or close) and how many of them run a job now.
func (m *Manager) Occupancy() (open, busy int) {
	m.mu.Lock()
	ls := make([]*live, 0, len(m.live))
	for _, l := range m.live {
		ls = append(ls, l)
	}
	m.mu.Unlock()
	for _, l := range ls {
		l.mu.Lock()
		if l.job != nil {
			busy++
		}
		l.mu.Unlock()
	}
	return len(ls), busy
}

// HoldingProcesses returns the ids of the open sessions whose tools keep processes running
// (a bash session started with start, an MCP server), on any host, sorted: what a new
// harness, which a changed config may need, would end. A session whose inventory cannot be
// taken counts by its last known handles. Each inventory is bounded by 2 s.
func (m *Manager) HoldingProcesses(ctx context.Context) []string {
	m.mu.Lock()
	ls := make([]*live, 0, len(m.live))
	for _, l := range m.live {
		ls = append(ls, l)
	}
	m.mu.Unlock()
	out := []string{}
	for _, l := range ls {
		if l.rt.runsProcesses(ctx) {
			out = append(out, l.id)
		}
	}
	slices.Sort(out)
	return out
}
