package sessions

// Cancel stops the job running on session id when it is the job named jobID (any job
// when jobID is empty), with [ErrStopped] as the cause, and reports whether it stopped
// one. A cancel names its job so that a late one, sent for a turn that has ended since, is
// a no-op rather than the stop of the next turn. A turn whose input is not durable yet is
// stopped as soon as it is: the submit that started it then answers as accepted (it ran,
// and was stopped), never with the stop as its error. A stopped turn ends cancelled (its
// running calls get unknown outcomes); a retry wait ends at once. It is the one way to stop
// a job, for every front end.
func (m *Manager) Cancel(id, jobID string) bool {
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	j := l.job
	if j == nil || jobID != "" && j.ID != jobID {
		return false
	}
	if j.Kind == JobTurn && !isClosed(j.accepted) {
		j.stopAccepted = true
		return true
	}
	j.cancel(ErrStopped)
	return true
}
