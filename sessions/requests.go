package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"myco.dev/agent/model"
	"myco.dev/policy"
)

// The idempotent requests of the JSON API: every create, submit and action carries a
// request id, and the same id answers the same result, also after a restart, because the
// id is saved with what it did: on the session it created, on the user turn it submitted,
// or among the session's action records. With the id a digest of what the request asked is
// saved, so that the same id sent with a different body is refused rather than answered
// with the first result: a client that reuses an id by mistake learns of it.

// Errors of requests.
var (
	// ErrUnknownAction reports an action the API does not have.
	ErrUnknownAction = errors.New("sessions: unknown action")
	// ErrParentNotFound reports a parent session that does not exist.
	ErrParentNotFound = errors.New("sessions: parent session not found")
	// ErrRequestConflict reports a request id that was used before for a different request;
	// see [RequestConflictError].
	ErrRequestConflict = errors.New("sessions: the request id was used for a different request")
)

// RequestConflictError reports a request id sent again with a different body: Before says
// what the first request with that id did.
type RequestConflictError struct {
	RequestID string
	Before    string
}

func (e *RequestConflictError) Error() string {
	return fmt.Sprintf("request_id %s was used before for a different request (%s); a retry must send the same body, and a new request a new request_id",
		strconv.Quote(e.RequestID), e.Before)
}

func (e *RequestConflictError) Unwrap() error { return ErrRequestConflict }

// request is an API request: its id, and the digest of what it asked (see requestSum).
type request struct{ id, sum string }

// requestSum is the digest of what a request asked: its kind and its fields, in order.
// Records saved before digests were kept have none, and match any body.
func requestSum(kind string, fields ...string) string {
	h := sha256.New()
	h.Write([]byte(kind))
	for _, f := range fields {
		h.Write([]byte{0})
		h.Write([]byte(strconv.Quote(f)))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// sameRequest reports whether a saved digest matches: an empty one (saved before digests
// were kept) matches any.
func sameRequest(saved, sum string) bool { return saved == "" || saved == sum }

// A Submission is a message as an API client sent it: its text, the files its @path tokens
// named (Refs, read from the session's directory) and the files it carried (Uploads). The
// model gets the text, then the refs, then the uploads.
type Submission struct {
	Text    string
	Refs    []model.Part
	Uploads []model.Part
}

// parts is the message as the model gets it.
func (s Submission) parts() []model.Part {
	var ps []model.Part
	if s.Text != "" {
		ps = append(ps, model.TextPart(s.Text))
	}
	ps = append(ps, s.Refs...)
	return append(ps, s.Uploads...)
}

// submitSum is the digest of a submit: the text and the uploads, which are the request's
// body. The refs are not: they were read from files that may have changed before a retry,
// and the text names them. A submit without uploads has the digest it had before uploads
// were kept, so that retries of requests saved then still match.
func submitSum(s Submission) string {
	fields := []string{s.Text}
	for _, u := range s.Uploads {
		h := sha256.New()
		h.Write([]byte(u.Text))
		if u.Image != nil {
			h.Write([]byte(u.Image.MediaType + "\x00" + u.Image.Data))
		}
		fields = append(fields, "upload", u.Name, hex.EncodeToString(h.Sum(nil)))
	}
	return requestSum("submit", fields...)
}

// createSum is the digest of a create request: the fields a client sends. The directory
// counts only when one was sent, so that the digests saved before it was a field still
// match their retries.
func createSum(o CreateOptions) string {
	fields := []string{o.Parent, strconv.FormatBool(o.Fork), o.Model, o.Title}
	if o.Cwd != "" {
		fields = append(fields, "cwd", o.Cwd)
	}
	if o.MaxCost != 0 {
		fields = append(fields, "max_cost", strconv.FormatFloat(o.MaxCost, 'g', -1, 64))
	}
	return requestSum("create", fields...)
}

// actSum is the digest of an action.
func actSum(action, arg string) string { return requestSum("act", action, arg) }

// requests serializes requests with the same id and remembers which session each create
// request made.
type requests struct {
	mu      sync.Mutex               // guards the fields below
	created map[string]request       // create request id -> the session it made (id) and its digest; nil until loaded
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

// createdBy returns the session that create request id made and the request's digest,
// loading the index of request ids from the store on first use.
func (m *Manager) createdBy(ctx context.Context, id string) (request, error) {
	q := &m.requests
	q.mu.Lock()
	loaded := q.created != nil
	q.mu.Unlock()
	if !loaded {
		list, err := m.o.Store.List(ctx)
		if err != nil {
			return request{}, err
		}
		q.mu.Lock()
		if q.created == nil {
			q.created = map[string]request{}
			for _, s := range list {
				if s.RequestID != "" {
					q.created[s.RequestID] = request{id: s.ID, sum: s.RequestSum}
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
// before answers that session (created is false), or, when it asked for something else, a
// [RequestConflictError]; otherwise the session is created and the id saved with it.
func (m *Manager) CreateRequest(ctx context.Context, requestID string, o CreateOptions) (id string, created bool, err error) {
	if requestID == "" {
		return "", false, errors.New("sessions: a request needs a request id")
	}
	defer m.requests.lock("\x00" + requestID)()
	sum := createSum(o)
	if before, err := m.createdBy(ctx, requestID); err != nil {
		return "", false, err
	} else if before.id != "" {
		if !sameRequest(before.sum, sum) {
			return "", false, &RequestConflictError{RequestID: requestID, Before: "creating session " + before.id}
		}
		return before.id, false, nil
	}
	o.request = request{id: requestID, sum: sum}
	if id, err = m.Create(ctx, o); err != nil {
		return "", false, err
	}
	m.requests.mu.Lock()
	m.requests.created[requestID] = request{id: id, sum: sum}
	m.requests.mu.Unlock()
	return id, true, nil
}

// Acceptance is a submission's answer: when its input was accepted.
type Acceptance struct {
	At     time.Time
	Thread string
	// JobID is the turn's job, while it runs (see [Manager.Cancel]); a repeat of a request
	// whose turn ended has none.
	JobID string
	// Repeat reports that the request was accepted before: this is the first answer again.
	Repeat bool
}

// SubmitRequest submits sub to session id for API request requestID and returns once it
// is durable. A request id that was accepted before answers its first acceptance and
// submits nothing; one that was used for another message (other text or other uploads)
// or an action answers a [RequestConflictError]. A busy session refuses with a [BusyError].
func (m *Manager) SubmitRequest(ctx context.Context, id, requestID string, sub Submission) (Acceptance, error) {
	if requestID == "" {
		return Acceptance{}, errors.New("sessions: a request needs a request id")
	}
	defer m.requests.lock(id + "\x00" + requestID)()
	req := request{id: requestID, sum: submitSum(sub)}
	// A retry whose first attempt's client gave up before the input was durable waits for
	// that turn, which goes on. The job is looked at before the document: a job that ends
	// between the two has its acceptance in the document.
	if j := m.job(id); j != nil && j.request.id == requestID {
		if !sameRequest(j.request.sum, req.sum) {
			return Acceptance{}, &RequestConflictError{RequestID: requestID, Before: "another message, which is running now"}
		}
		at, err := j.Accepted(ctx)
		if err != nil {
			return Acceptance{}, err
		}
		return Acceptance{At: at, Thread: j.thread, JobID: j.ID, Repeat: true}, nil
	}
	sess, _, err := m.Snapshot(ctx, id)
	if err != nil {
		return Acceptance{}, err
	}
	if e, th, ok := sess.submitted(requestID); ok {
		if !sameRequest(e.RequestSum, req.sum) {
			return Acceptance{}, &RequestConflictError{RequestID: requestID, Before: "another message, accepted " + e.AcceptedAt.Format(time.RFC3339)}
		}
		return Acceptance{At: *e.AcceptedAt, Thread: th, Repeat: true}, nil
	}
	if a, ok := sess.Action(requestID); ok {
		return Acceptance{}, &RequestConflictError{RequestID: requestID, Before: "the action " + a.Action}
	}
	j, err := m.submit(ctx, id, req, sub.parts())
	if err != nil {
		return Acceptance{}, err
	}
	at, err := j.Accepted(ctx)
	if err != nil {
		return Acceptance{}, err
	}
	return Acceptance{At: at, Thread: j.thread, JobID: j.ID}, nil
}

// Actions of [Manager.Act].
const (
	ActSelectModel = "select_model"
	ActCompact     = "compact"
	ActArchive     = "archive"
	ActRestore     = "restore"
	ActSetTitle    = "set_title"
	ActRetry       = "retry"
	ActSetMode     = "set_mode"
	ActApprove     = "approve" // arg: an [Answer] in JSON
	ActDeny        = "deny"    // arg: an [Answer] in JSON
)

// Act does an API action on session id for request requestID: select_model (arg: the
// catalog key), compact (started; its end shows in the events and the snapshot), retry
// (the last turn, which failed or was stopped, is sent again: see [Manager.Retry]; started
// like compact; arg, when not empty, is a new budget for the session's tree first, see
// [Manager.SetMaxCost]), archive, restore, or set_title (arg: the title). A request id done before answers its first
// record and does nothing; one that was used for another action or a message answers a
// [RequestConflictError].
func (m *Manager) Act(ctx context.Context, id, requestID, action, arg string) (rec ActionRecord, repeat bool, err error) {
	if requestID == "" {
		return rec, false, errors.New("sessions: a request needs a request id")
	}
	defer m.requests.lock(id + "\x00" + requestID)()
	sess, _, err := m.Snapshot(ctx, id)
	if err != nil {
		return rec, false, err
	}
	sum := actSum(action, arg)
	if r, ok := sess.Action(requestID); ok {
		if r.Action != action || !sameRequest(r.Sum, sum) {
			return rec, false, &RequestConflictError{RequestID: requestID, Before: "the action " + r.Action}
		}
		return r, true, nil
	}
	if _, _, ok := sess.submitted(requestID); ok {
		return rec, false, &RequestConflictError{RequestID: requestID, Before: "a message"}
	}
	rec = ActionRecord{RequestID: requestID, Action: action, At: time.Now().UTC(), Sum: sum}
	var change func(*Session) error
	switch action {
	case ActSelectModel:
		if err := m.checkModel(arg); err != nil {
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
	case ActRetry:
		if arg != "" { // a new budget first: the retry of a turn the budget stopped
			v, err := strconv.ParseFloat(arg, 64)
			if err != nil {
				return rec, false, ErrInvalidBudget
			}
			if err := m.SetMaxCost(ctx, id, v); err != nil {
				return rec, false, err
			}
		}
		if _, err := m.Retry(ctx, id); err != nil {
			return rec, false, err
		}
		rec.Result = "started"
	case ActSetMode:
		if _, err := policy.ParseMode(arg); err != nil {
			return rec, false, fmt.Errorf("%w: %w", ErrBadMode, err)
		}
		rec.Result = arg
		change = func(s *Session) error { s.Mode = arg; return nil }
	case ActApprove, ActDeny:
		var ans Answer
		if err := json.Unmarshal([]byte(arg), &ans); err != nil {
			return rec, false, fmt.Errorf("sessions: decode the answer: %w", err)
		}
		ans.Allow = action == ActApprove
		a, err := m.Resolve(ctx, id, ans)
		if err != nil {
			return rec, false, err
		}
		rec.Result = a.Status
	default:
		return rec, false, fmt.Errorf("%w %q: the actions are submit, select_model, compact, retry, archive, restore, set_title, set_mode, approve and deny", ErrUnknownAction, action)
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

// submitted returns the user turn that request id submitted and its thread, if any.
func (s *Session) submitted(requestID string) (Entry, string, bool) {
	for _, th := range s.Threads {
		for _, e := range th.Entries {
			if e.RequestID == requestID && e.AcceptedAt != nil {
				return e, th.ID, true
			}
		}
	}
	return Entry{}, "", false
}
