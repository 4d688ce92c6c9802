package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"myco.dev/agent/model"
)

// The idempotent requests of the JSON API: every create, submit and action carries a
// request id, and the same id answers the same result, also after a restart, because the
// id is saved with what it did: on the session it created, on the user turn it submitted,
// or among the session's action records.

// Errors of requests.
var (
	// ErrUnknownAction reports an action the API does not have.
	ErrUnknownAction = errors.New("sessions: unknown action")
	// ErrParentNotFound reports a parent session that does not exist.
	ErrParentNotFound = errors.New("sessions: parent session not found")
)

// requests serializes requests with the same id and remembers which session each create
// request made.
type requests struct {
	mu      sync.Mutex               // guards the fields below
	created map[string]string        // create request id -> session id; nil until loaded
	running map[string]*requestGuard // "session\x00request" -> the lock of requests with that id
}

// requestGuard serializes the requests with one id; it is dropped when none holds or
// awaits it, so that the map holds only the ids in flight.
type requestGuard struct {
	mu    sync.Mutex // held while a request with the id is done; the others wait for it
	users int        // requests holding or waiting for mu; guarded by requests.mu
}

// lock serializes requests with the same key: a retry that arrives while the first is
// being done waits for it and then finds its result.
func (q *requests) lock(key string) func() {
	q.mu.Lock()
	if q.running == nil {
		q.running = map[string]*requestGuard{}
	}
	g := q.running[key]
	if g == nil {
		g = &requestGuard{}
		q.running[key] = g
	}
	g.users++
	q.mu.Unlock()
	g.mu.Lock()
	return func() {
		g.mu.Unlock()
		q.mu.Lock()
		if g.users--; g.users == 0 {
			delete(q.running, key)
		}
		q.mu.Unlock()
	}
}

// createdBy returns the session that create request id made, loading the index of
// request ids from the store on first use.
func (m *Manager) createdBy(ctx context.Context, id string) (string, error) {
	q := &m.requests
	q.mu.Lock()
	loaded := q.created != nil
	q.mu.Unlock()
	if !loaded {
		list, err := m.o.Store.List(ctx)
		if err != nil {
			return "", err
		}
		q.mu.Lock()
		if q.created == nil {
			q.created = map[string]string{}
			for _, s := range list {
				if s.RequestID != "" {
					q.created[s.RequestID] = s.ID
				}
			}
		}
		q.mu.Unlock()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.created[id], nil
}

// CreateRequest is [Manager.Create] for an API request: a request id that made a session
// before answers that session (created is false); otherwise the session is created and
// the id saved with it.
func (m *Manager) CreateRequest(ctx context.Context, requestID string, o CreateOptions) (id string, created bool, err error) {
	if requestID == "" {
		return "", false, errors.New("sessions: a request needs a request id")
	}
	defer m.requests.lock("\x00" + requestID)()
	if id, err := m.createdBy(ctx, requestID); err != nil || id != "" {
		return id, false, err
	}
	o.requestID = requestID
	if id, err = m.Create(ctx, o); err != nil {
		return "", false, err
	}
	m.requests.mu.Lock()
	m.requests.created[requestID] = id
	m.requests.mu.Unlock()
	return id, true, nil
}

// Acceptance is a submission's answer: when its input was accepted.
type Acceptance struct {
	At     time.Time
	Thread string
	// Repeat reports that the request was accepted before: this is the first answer again.
	Repeat bool
}

// SubmitRequest submits input to session id for API request requestID and returns once
// the input is durable. A request id that was accepted before answers its first
// acceptance and submits nothing. A busy session refuses with a [BusyError].
func (m *Manager) SubmitRequest(ctx context.Context, id, requestID string, input ...model.Part) (Acceptance, error) {
	if requestID == "" {
		return Acceptance{}, errors.New("sessions: a request needs a request id")
	}
	defer m.requests.lock(id + "\x00" + requestID)()
	// A retry whose first attempt's client gave up before the input was durable waits for
	// that turn, which goes on. The job is looked at before the document: a job that ends
	// between the two has its acceptance in the document.
	if j := m.job(id); j != nil && j.requestID == requestID {
		at, err := j.Accepted(ctx)
		if err != nil {
			return Acceptance{}, err
		}
		return Acceptance{At: at, Thread: j.thread, Repeat: true}, nil
	}
	sess, _, err := m.Snapshot(ctx, id)
	if err != nil {
		return Acceptance{}, err
	}
	for _, th := range sess.Threads {
		for _, e := range th.Entries {
			if e.RequestID == requestID && e.AcceptedAt != nil {
				return Acceptance{At: *e.AcceptedAt, Thread: th.ID, Repeat: true}, nil
			}
		}
	}
	j, err := m.submit(ctx, id, requestID, input)
	if err != nil {
		return Acceptance{}, err
	}
	at, err := j.Accepted(ctx)
	if err != nil {
		return Acceptance{}, err
	}
	return Acceptance{At: at, Thread: j.thread}, nil
}

// Actions of [Manager.Act].
const (
	ActSelectModel = "select_model"
	ActCompact     = "compact"
	ActArchive     = "archive"
	ActRestore     = "restore"
	ActSetTitle    = "set_title"
)

// Act does an API action on session id for request requestID: select_model (arg: the
// catalog key), compact (started; its end shows in the events and the snapshot), archive,
// restore, or set_title (arg: the title). A request id done before answers its first
// record and does nothing.
func (m *Manager) Act(ctx context.Context, id, requestID, action, arg string) (rec ActionRecord, repeat bool, err error) {
	if requestID == "" {
		return rec, false, errors.New("sessions: a request needs a request id")
	}
	defer m.requests.lock(id + "\x00" + requestID)()
	sess, _, err := m.Snapshot(ctx, id)
	if err != nil {
		return rec, false, err
	}
	if r, ok := sess.Action(requestID); ok {
		return r, true, nil
	}
	rec = ActionRecord{RequestID: requestID, Action: action, At: time.Now().UTC()}
	var change func(*Session) error
	switch action {
	case ActSelectModel:
		if _, err := m.o.Models.Agent(arg, nil); err != nil {
			return rec, false, err
		}
		rec.Result = arg
		change = func(s *Session) error { s.Selected = arg; return nil }
	case ActArchive, ActRestore:
		archived := action == ActArchive
		change = func(s *Session) error { s.Archived = archived; return nil }
	case ActSetTitle:
		t := Title(arg)
		if t == "" {
			return rec, false, errors.New("sessions: the title is empty")
		}
		rec.Result = t
		change = func(s *Session) error { s.Title = t; return nil }
	case ActCompact:
		if _, err := m.Compact(ctx, id); err != nil {
			return rec, false, err
		}
		rec.Result = "started"
	default:
		return rec, false, fmt.Errorf("%w %q: the actions are submit, select_model, compact, archive, restore and set_title", ErrUnknownAction, action)
	}
	err = m.update(ctx, id, func(s *Session) error {
		if change != nil {
			if err := change(s); err != nil {
				return err
			}
		}
		s.noteAction(rec)
		return nil
	})
	return rec, false, err
}

// forkEntries are the entries a fork of thread th starts with: its saved conversation,
// and, for the calls of its last response that have no result (they were running in the
// parent, perhaps the very call that makes this fork), unknown outcomes: they are never
// replayed.
func forkEntries(parent string, th *Thread) []Entry {
	entries := append([]Entry(nil), th.Entries...)
	if len(entries) == 0 {
		return entries
	}
	last := entries[len(entries)-1].Message
	calls := last.ToolCalls()
	if last.Role != model.Assistant || len(calls) == 0 {
		return entries
	}
	parts := make([]model.Part, 0, len(calls))
	for _, c := range calls {
		parts = append(parts, model.Part{Kind: model.KindToolResult, ToolResult: &model.ToolResult{CallID: c.ID, Unknown: true,
			Text: fmt.Sprintf("outcome unknown: this call was still running in session %s when this session was forked from it; it is not run again here. Inspect its effects before repeating it.", parent)}})
	}
	return append(entries, Entry{Message: model.Message{Role: model.User, Parts: parts}, Recovered: true})
}
