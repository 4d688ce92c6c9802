package sessions

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"myco.dev/agent/model"
)

// Queued is a message sent while its session was busy. It waits in [Session.Queue], where
// it can be edited or withdrawn, and runs as the user's next turn when the job before it
// ends; it leaves the queue in the write that accepts it as a turn's input.
type Queued struct {
	ID    string       `json:"id"`
	Parts []model.Part `json:"parts"`
	At    time.Time    `json:"at"`
}

// Text is the message's text, without its attachments.
func (q Queued) Text() string {
	var b strings.Builder
	for _, p := range q.Parts {
		if p.Kind == model.KindText && p.Name == "" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// maxQueued bounds a session's queue.
const maxQueued = 16

var (
	// ErrNotQueued reports a queued message that is not in the queue (any more): it ran,
	// or was withdrawn.
	ErrNotQueued = errors.New("sessions: no such queued message; it has run or was withdrawn")
	// ErrQueueFull reports a queue that holds [maxQueued] messages already.
	ErrQueueFull = fmt.Errorf("sessions: %d messages wait already; withdraw one or wait for the turn to end", maxQueued)
)

// queued returns the queued message id.
func (s *Session) queued(id string) (Queued, bool) {
	for _, q := range s.Queue {
		if q.ID == id {
			return q, true
		}
	}
	return Queued{}, false
}

// Enqueue puts input at the end of session id's queue: it runs as a turn once the jobs
// before it ended, at once when nothing runs. The queue is saved with the session, so a
// queued message outlives a restart (it then runs after the next job, or on [Manager.RunQueued]).
func (m *Manager) Enqueue(ctx context.Context, id string, input ...model.Part) (Queued, error) {
	if len(input) == 0 || strings.TrimSpace(model.Message{Parts: input}.Text()) == "" && !hasImage(input) {
		return Queued{}, errors.New("sessions: the input is empty")
	}
	q := Queued{ID: "q" + rand.Text()[:10], Parts: input, At: time.Now().UTC()}
	err := m.update(ctx, id, func(s *Session) error {
		if len(s.Queue) >= maxQueued {
			return ErrQueueFull
		}
		s.Queue = append(slices.Clone(s.Queue), q)
		return nil
	})
	if err != nil {
		return Queued{}, err
	}
	m.RunQueued(ctx, id)
	return q, nil
}

// EditQueued replaces the text of queued message qid of session id, keeping its
// attachments.
func (m *Manager) EditQueued(ctx context.Context, id, qid, text string) error {
	if strings.TrimSpace(text) == "" {
		return errors.New("sessions: the text is empty; withdraw the message instead")
	}
	return m.update(ctx, id, func(s *Session) error {
		i := slices.IndexFunc(s.Queue, func(q Queued) bool { return q.ID == qid })
		if i < 0 {
			return ErrNotQueued
		}
		s.Queue = slices.Clone(s.Queue)
		parts := []model.Part{model.TextPart(text)}
		for _, p := range s.Queue[i].Parts {
			if p.Kind != model.KindText || p.Name != "" {
				parts = append(parts, p) // an attachment
			}
		}
		s.Queue[i].Parts = parts
		return nil
	})
}

// Unqueue withdraws queued message qid of session id.
func (m *Manager) Unqueue(ctx context.Context, id, qid string) error {
	return m.update(ctx, id, func(s *Session) error {
		n := len(s.Queue)
		s.Queue = slices.DeleteFunc(slices.Clone(s.Queue), func(q Queued) bool { return q.ID == qid })
		if len(s.Queue) == n {
			return ErrNotQueued
		}
		return nil
	})
}

// RunQueued starts the first queued message of session id as a turn when nothing runs on
// it, and reports whether it started one. A job that runs, here or in another process,
// runs the queue when it ends.
func (m *Manager) RunQueued(ctx context.Context, id string) bool {
	l, err := m.open(ctx, id)
	if err != nil || l.rt.Err() != nil {
		return false
	}
	var first Queued
	l.rt.doc.view(func(s *Session) {
		if len(s.Queue) > 0 {
			first = s.Queue[0]
		}
	})
	if first.ID == "" {
		return false
	}
	_, err = m.startOn(ctx, id, JobTurn, request{}, func(l *live) jobFunc {
		return func(ctx context.Context, j *Job, r *runner) (JobResult, error) {
			j.queued = first.ID
			res, err := r.submit(ctx, request{}, inputMeta{dequeue: first.ID}, nil)
			return JobResult{Result: res}, err
		}
	})
	return err == nil
}
