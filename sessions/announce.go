package sessions

import "context"

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
	for p, n := id, 0; n < maxTree; n++ {
		up, err := m.o.Store.parentOf(ctx, p)
		if err != nil || up == "" {
			return
		}
		u.Session = up
		m.bus.publish(u)
		p = up
	}
}

// RunningJob returns the job running on session id in this process, or nil: its
// [Job.Done] closes when it has ended, and the session's snapshot then says how.
func (m *Manager) RunningJob(id string) *Job { return m.job(id) }
