package sessions

import (
	"context"
	"sync"
)

// What the JSON API needs of the service beyond what every front end calls: events for a
// session's birth, and the running job, to wait for its end.

// announce publishes the creation of session s: a created update on its own stream and,
// for a child, a child_created update on its parent's, so that a client streaming the
// parent sees its children come.
func (m *Manager) announce(s *Session) {
	title := s.Title
	m.bus.publish(Update{Type: UpdateCreated, Session: s.ID, Time: s.Created, Title: &title, Model: s.Model, Parent: s.Parent})
	if s.Parent != "" {
		m.bus.publish(Update{Type: UpdateChildCreated, Session: s.Parent, Time: s.Created, Child: s.ID, Model: s.Model})
	}
}

// announceUp publishes u, an approval's request or answer in session id, on the stream of
// each session above it in its tree too, with Child naming the session that asked: a
// child's request shows on its parent and its root, which answer it on the child.
func (m *Manager) announceUp(id string, u Update) {
	ctx := context.WithoutCancel(m.base)
	u.Child, u.Seq = id, 0
	waiting := u.Type == UpdateApprovalRequested
	for p, n := id, 0; n < maxTree; n++ {
		up, err := m.o.Store.parentOf(ctx, p)
		if err != nil || up == "" {
			return
		}
		m.below.set(up, id+"/"+u.CallID, waiting) // before the update: its status reads it
		u.Session = up
		m.bus.publish(u)
		p = up
	}
}

// belowTally counts, for each session, the approvals that wait in the sessions below it
// in its tree, as [Manager.announceUp] saw them asked and answered: what makes an
// ancestor's own state "needs you". It lives in memory: after a restart the list still
// finds them (from each session's metadata), and the ancestor's page its cards.
type belowTally struct {
	mu sync.Mutex
	m  map[string]map[string]bool // session -> "child/call" waiting below it
}

// set records that approval key waits below session id, or no longer does.
func (t *belowTally) set(id, key string, waiting bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case waiting && t.m == nil:
		t.m = map[string]map[string]bool{id: {key: true}}
	case waiting && t.m[id] == nil:
		t.m[id] = map[string]bool{key: true}
	case waiting:
		t.m[id][key] = true
	default:
		delete(t.m[id], key)
		if len(t.m[id]) == 0 {
			delete(t.m, id)
		}
	}
}

// count returns how many approvals wait below session id.
func (t *belowTally) count(id string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m[id])
}

// RunningJob returns the job running on session id in this process, or nil: its
// [Job.Done] closes when it has ended, and the session's snapshot then says how.
func (m *Manager) RunningJob(id string) *Job { return m.job(id) }
