package sessions

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Subscribe starts a subscription to the updates of sessions (nil for every session of the
// profile; profile-wide updates reach every subscription) after the event id after. An
// empty after starts at the newest update; an id of another process or boot starts with a
// reset. Close the subscription when done. Once the service closed, Next answers
// [ErrShutdown] when no update is left: a stream of a server that was replaced (its config
// changed) ends, and its client reconnects to the new one.
func (m *Manager) Subscribe(sessions []string, after string) *Subscription {
	s := m.bus.subscribe(sessions, after)
	s.done = m.ended
	return s
}

// EventID returns the id of the newest update so far: a page rendered now subscribes
// after it to miss nothing that happens later.
func (m *Manager) EventID() string {
	m.bus.mu.RLock()
	defer m.bus.mu.RUnlock()
	return m.bus.id(m.bus.seq)
}

// Publish publishes a profile-wide update (Session must be empty), such as a remote host's
// state change.
func (m *Manager) Publish(u Update) {
	u.Session = ""
	if u.Time.IsZero() {
		u.Time = time.Now().UTC()
	}
	m.bus.publish(u)
}

// Status is what a session is doing now.
type Status struct {
	Busy  bool
	Job   string // the running job's kind, when Busy
	JobID string // and its id, which a cancel may name
	// Elsewhere names another process that works on the session now, if one does.
	Elsewhere string
	// Stopped is the save error that stopped the session's work in this process, if any.
	Stopped error
	// Model is the catalog key the next turn uses.
	Model string
	// LastTurn is how the latest turn stands: running, or as the document records it, or,
	// when this process could not record it (a save failed), as it ended here.
	LastTurn TurnState
	// ApprovalsBelow is how many tool calls of the sessions below it in its tree wait for
	// the person's approval, as this process saw them asked since it started (a child's
	// request shows on its ancestors): such a session needs you too ([StateOf]).
	ApprovalsBelow int
}

// Snapshot returns a copy of session id's document that is safe to read while its work
// goes on, and what it is doing now. The copy shares message contents, which are never
// changed in place. Its Cwd is the directory the session works in: for a session saved
// before sessions kept theirs, the service's ([ManagerOptions].Dir).
func (m *Manager) Snapshot(ctx context.Context, id string) (*Session, Status, error) {
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	st := Status{ApprovalsBelow: m.below.count(id)}
	var failed *TurnState
	if l != nil {
		l.mu.Lock()
		if l.job != nil {
			st.Busy, st.Job, st.JobID = true, l.job.Kind, l.job.ID
		}
		failed = l.failed
		l.mu.Unlock()
		st.Stopped = l.rt.Err()
		if st.Busy || !l.rt.doc.changedOnDisk() {
			cp := l.rt.doc.snapshot()
			if !st.Busy {
				st.Elsewhere, _ = m.o.Store.Holder(id)
			}
			st.Model = m.modelOf(cp)
			st.LastTurn = lastTurn(cp, st, failed)
			cp.Cwd = m.dirOf(cp)
			return cp, st, nil
		}
		// Another process wrote to it since this runtime last did: show what it wrote. The
		// runtime reloads when it next takes the writer gate.
	}
	sess, err := m.load(ctx, id)
	if err != nil {
		return nil, st, err
	}
	if !st.Busy {
		st.Elsewhere, _ = m.o.Store.Holder(id)
	}
	st.Model = m.modelOf(sess)
	st.LastTurn = lastTurn(sess, st, failed)
	cp := sess.clone()
	cp.Cwd = m.dirOf(cp)
	return cp, st, nil
}

// lastTurn is how session s's latest turn stands, given what it is doing now (st) and how
// its last turn job ended here when the document could not say (failed).
func lastTurn(s *Session, st Status, failed *TurnState) TurnState {
	t := s.LastTurn()
	switch {
	case st.Busy && st.Job == JobTurn || st.Elsewhere != "" && t.Status == TurnInterrupted:
		return TurnState{Status: TurnRunning, Thread: s.Latest().ID}
	case failed != nil && (t.At.IsZero() || failed.At.After(t.At)):
		return *failed
	}
	return t
}

func (m *Manager) modelOf(s *Session) string {
	if k := s.ModelKey(); k != "" {
		return k
	}
	return m.models().Default()
}

// load returns session id as its file holds it now, from the documents kept of sessions
// that are not open, which are checked against the file on every call.
func (m *Manager) load(ctx context.Context, id string) (*Session, error) {
	if c, ok := m.docs.get(id); ok && !m.o.Store.changed(id, c.file) {
		return c.sess, nil
	}
	sess, file, err := m.o.Store.load(ctx, id)
	if err != nil {
		return nil, err
	}
	m.docs.put(id, loaded{sess: sess, file: file})
	return sess, nil
}

// clone copies the document down to the entries of each thread.
func (s *Session) clone() *Session {
	cp := *s
	cp.Links = append([]string(nil), s.Links...)
	cp.Actions = slices.Clone(s.Actions)
	cp.Queue = slices.Clone(s.Queue)
	cp.restores = slices.Clone(s.restores)
	cp.heads = maps.Clone(s.heads)
	cp.Threads = make([]*Thread, len(s.Threads))
	for i, t := range s.Threads {
		cp.Threads[i] = t.clone()
	}
	return &cp
}

// clone copies the thread down to its entries, which share message contents (never
// changed in place), without the records of the running batch's tool calls.
func (t *Thread) clone() *Thread {
	tc := *t
	tc.Entries = append([]Entry(nil), t.Entries...)
	tc.intents, tc.results, tc.progress, tc.partial = nil, nil, nil, nil
	tc.calls = maps.Clone(t.calls)
	tc.spentBy = maps.Clone(t.spentBy)
	tc.ends = slices.Clone(t.ends)
	return &tc
}

// ListOptions filter a listing.
type ListOptions struct {
	// Archived picks archived sessions only; All picks both; neither picks active ones.
	Archived, All bool
	// IncludeHidden keeps hidden sessions (children) in the listing.
	IncludeHidden bool
	// Query keeps sessions whose title or id contains it, case-insensitively.
	Query string
	// Parent keeps the children of this session only.
	Parent string
	// Cwd keeps the sessions that work in this directory only (compared cleaned).
	Cwd string
	// States keeps the sessions in one of these states only ([States]); none keeps all.
	States []string
	// Project keeps the sessions of this project only ([Manager.Project]).
	Project string
}

// Listed is one row of a listing.
type Listed struct {
	Summary
	Busy    bool   // a job runs on it in this process
	State   string // one of [States]
	Cost    Cost   // what its own responses cost
	Project string // the project of its directory ([Manager.Project])
	// WaitingBelow is a session of its tree below it whose tool call waits for the
	// person's approval: this one needs you too, and its row links there.
	WaitingBelow string
}

// List returns the profile's sessions, newest first, filtered by o. Each one's Cwd is the
// directory it works in (the service's for a session saved before sessions kept theirs;
// empty for one whose file cannot be read).
func (m *Manager) List(ctx context.Context, o ListOptions) ([]Listed, error) {
	all, err := m.o.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	keep := o.keeper()
	below := waitingBelow(all)
	out := make([]Listed, 0, len(all))
	for _, s := range all {
		if s.Cwd == "" && s.Problem == "" {
			s.Cwd = m.o.Dir
		}
		if !keep.summary(s) {
			continue
		}
		l := Listed{Summary: s, Busy: m.job(s.ID) != nil}
		if s.Problem == "" {
			l.State, l.Cost, l.Project = m.rowState(s, l.Busy), m.rowCost(s), m.Project(s.Cwd)
			if c := below[s.ID]; c != "" {
				l.State, l.WaitingBelow = StateNeedsYou, c
			}
		}
		if keep.listed(l) {
			out = append(out, l)
		}
	}
	return out, nil
}

// waitingBelow maps each session with a descendant among all whose tool call waits for
// approval to one such descendant (the most recent one listed): a child's request shows
// on its parent and on the root of its tree, which is what the list shows of a tree.
func waitingBelow(all []Summary) map[string]string {
	parent := make(map[string]string, len(all))
	for _, s := range all {
		if s.Parent != "" {
			parent[s.ID] = s.Parent
		}
	}
	below := map[string]string{}
	for _, s := range all {
		if s.Approvals == 0 {
			continue
		}
		// At most len(all) steps: a damaged tree with a cycle ends too.
		for p, n := parent[s.ID], 0; p != "" && n < len(all); p, n = parent[p], n+1 {
			if _, ok := below[p]; !ok {
				below[p] = s.ID
			}
		}
	}
	return below
}

// Filter returns the rows of list (a listing of every session, [ListOptions].All and
// IncludeHidden) that o keeps: one listing can serve a page's rows and its other parts.
func Filter(list []Listed, o ListOptions) []Listed {
	keep := o.keeper()
	var out []Listed
	for _, l := range list {
		if keep.summary(l.Summary) && keep.listed(l) {
			out = append(out, l)
		}
	}
	return out
}

// keeper is a [ListOptions] made ready to test rows.
type keeper struct {
	o ListOptions
	q string // the query, lowercase
}

func (o ListOptions) keeper() keeper {
	if o.Cwd != "" {
		o.Cwd = filepath.Clean(o.Cwd)
	}
	if o.Project != "" {
		o.Project = filepath.Clean(o.Project)
	}
	return keeper{o: o, q: strings.ToLower(strings.TrimSpace(o.Query))}
}

// summary tests what the store's row says.
func (k keeper) summary(s Summary) bool {
	o, q := k.o, k.q
	switch {
	case o.Cwd != "" && s.Cwd != o.Cwd:
		return false
	case s.Hidden && !o.IncludeHidden && o.Parent == "":
		return false
	case !o.All && s.Archived != o.Archived:
		return false
	case o.Parent != "" && s.Parent != o.Parent:
		return false
	case q != "" && !strings.Contains(strings.ToLower(s.Title), q) && !strings.Contains(strings.ToLower(s.ID), q):
		return false
	}
	return true
}

// listed tests what the service adds: the state and the project.
func (k keeper) listed(l Listed) bool {
	return (len(k.o.States) == 0 || slices.Contains(k.o.States, l.State)) && (k.o.Project == "" || l.Project == k.o.Project)
}

// update changes session id's metadata with f and publishes it: through its runtime when
// it is open (which takes the writer gate), else through a runtime of its own for the write.
func (m *Manager) update(ctx context.Context, id string, f func(*Session) error) error {
	l, err := m.open(ctx, id)
	if err != nil {
		return err
	}
	var ferr error
	err = l.rt.Update(ctx, func(s *Session) { ferr = f(s) })
	if ferr != nil {
		return ferr
	}
	return err
}

// SetTitle renames session id.
func (m *Manager) SetTitle(ctx context.Context, id, title string) error {
	t := Title(title)
	if t == "" {
		return errors.New("sessions: the title is empty")
	}
	return m.update(ctx, id, func(s *Session) error { s.Title = t; return nil })
}

// SetArchived archives or restores session id. Archiving changes browsing only: every
// thread, and a running job with its live tools, stay.
func (m *Manager) SetArchived(ctx context.Context, id string, archived bool) error {
	return m.update(ctx, id, func(s *Session) error { s.Archived = archived; return nil })
}

// SelectModel makes catalog key the model of session id's next turns. The next job builds
// the model anew, with the prelude read again.
func (m *Manager) SelectModel(ctx context.Context, id, key string) error {
	if err := m.checkModel(key); err != nil {
		return err
	}
	return m.update(ctx, id, func(s *Session) error { s.Selected = key; return nil })
}

// Owner returns the tool-resource owner of session id's runtime in this process, or "" when
// it is not open.
func (m *Manager) Owner(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.live[id]; l != nil {
		return l.rt.owner
	}
	return ""
}

// ModelInfo is a model of the catalog, as front ends show it and check against it.
type ModelInfo struct {
	Key                 string
	ContextWindow       int // tokens; 0 when the catalog does not say
	MaxImageBase64Bytes int
}

// ModelLister is a [Models] that lists its models, in catalog order.
type ModelLister interface {
	List() []ModelInfo
}

// ModelChecker is a [Models] that can tell whether it has a usable model key (with the
// error [Models.Agent] would give) without building a run's configuration, whose system
// prompt and tool specifications a check does not need.
type ModelChecker interface {
	Check(key string) error
}

// checkModel returns the error a run of model key would meet in the catalog, if any.
func (m *Manager) checkModel(key string) error {
	if c, ok := m.models().(ModelChecker); ok {
		return c.Check(key)
	}
	_, err := m.models().Agent(key, nil)
	return err
}

// Models returns the catalog's models in order. A catalog that is not a [ModelLister]
// lists its default model alone.
func (m *Manager) Models() []ModelInfo {
	if l, ok := m.models().(ModelLister); ok {
		return l.List()
	}
	info, err := m.Model(m.models().Default())
	if err != nil {
		return []ModelInfo{}
	}
	return []ModelInfo{info}
}

// DefaultModel returns the catalog key of new sessions.
func (m *Manager) DefaultModel() string { return m.models().Default() }

// Model returns the catalog's model key, or the catalog's error when it cannot run one: a
// key it does not have, say.
func (m *Manager) Model(key string) (ModelInfo, error) {
	cfg, err := m.models().Agent(key, nil)
	if err != nil {
		return ModelInfo{}, err
	}
	return ModelInfo{Key: key, ContextWindow: cfg.ContextWindow, MaxImageBase64Bytes: cfg.MaxImageBase64Bytes}, nil
}
