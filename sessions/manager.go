package sessions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/policy"
)

// Errors of the session service that callers branch on with errors.Is.
var (
	// ErrStopped is the cause of a job that [Manager.Stop] ended.
	ErrStopped = errors.New("sessions: stopped")
	// ErrBusy reports a session that already runs a job, here or in another process; see
	// [BusyError].
	ErrBusy = errors.New("sessions: busy")
	// ErrShutdown is the cause of the jobs that [Manager.Close] ended, and the error of
	// whatever is asked of a closed manager.
	ErrShutdown = errors.New("sessions: the session service is shutting down")
)

// BusyError reports a session that runs a job (Job) in this process, or, with Holder set,
// that another process holds.
type BusyError struct {
	Session string
	Job     string // "turn" or "compact"; empty when another process holds the session
	Holder  string // who holds it, when it is another process
}

func (e *BusyError) Error() string {
	if e.Holder != "" {
		return fmt.Sprintf("session %s is busy elsewhere: %s is working on it", e.Session, e.Holder)
	}
	return fmt.Sprintf("session %s is busy: a %s is running; stop it or wait for it to end", e.Session, e.Job)
}

func (e *BusyError) Unwrap() error { return ErrBusy }

// Job kinds.
const (
	JobTurn    = "turn"
	JobCompact = "compact"
)

// ToolHost is what the service needs of a profile's shared host harness: each session
// runtime gets an executor for its own resource owner, working in the session's directory
// dir (whose project may offer tools of its own). A host that keeps resources for an
// owner is also a [Releaser], and one that can list them an [Inventorier].
type ToolHost interface {
	Tools(owner, dir string) Tools
}

// Models resolves catalog keys into agent configurations.
type Models interface {
	// Default returns the catalog key of new sessions.
	Default() string
	// Agent returns the configuration of a run of model key whose system prompt carries
	// blocks, or an error naming a key the catalog does not have.
	Agent(key string, blocks []string) (AgentConfig, error)
}

// ManagerOptions configures a [Manager].
type ManagerOptions struct {
	Store  *Store
	Models Models
	// Tools is the profile's shared harness; nil means sessions have no tools.
	Tools ToolHost
	// Prompt reads what a session's system prompt is built from, for a session working in
	// directory dir: the appended blocks (project guidance is dir's) and a prelude watcher
	// relative to them. It is called when a session's model is built (its first job in this
	// process, and after a model switch). nil means neither.
	Prompt func(dir string) (blocks []string, prelude PreludeWatcher, err error)
	// Dir is the directory of sessions created without one and without a parent, and of
	// those saved before sessions kept theirs: the process's working directory, absolute.
	Dir string
	// Registry is where the root-only session tools find the runtimes; nil means a
	// private one.
	Registry *Registry
	// Wait makes a job wait while another process works on its session (the terminal
	// modes say so and wait); otherwise Submit and Compact refuse with a [BusyError].
	Wait bool
	// DeltaEvery is the least time between two published deltas of one session; the text
	// in between is coalesced. 0 means 40 ms.
	DeltaEvery time.Duration
	// PartialEvery is how often what streams of an answer is saved for a crash
	// ([Entry.Partial]); 0 means 2 s.
	PartialEvery time.Duration
	// IdleClose is how long a session with no job, no subscription of its own and no live
	// tool handle stays open (its document, runtime and event ring in memory) after its
	// last use; it reopens from disk when next used. 0 means 3 minutes; negative, never.
	// IdleKeep bounds how many such idle sessions stay open at once: beyond it the least
	// recently used are closed at once; 0 means 32.
	IdleClose time.Duration
	IdleKeep  int
	// Snapshots configures the captures of the sessions' files around their tool batches,
	// when Tools is a [Snapshotter]; its zero value captures nothing.
	Snapshots SnapshotOptions
	// Guard decides the sessions' tool calls (modes, rules, approvals, the sandbox); nil
	// runs every call at once.
	Guard *Guard
	// MaxCost is the budget of every session tree whose root has none of its own
	// ([Session.MaxCost]), in the catalog's money; 0 means none (config's max_cost).
	MaxCost float64
	Log     *slog.Logger // nil means slog.Default()
}

// Manager is the session service of one profile, the one thing every front end calls: it
// creates, opens, lists and archives sessions, runs their turns and compactions as jobs
// (one at a time per session; closing a client never stops one, [Manager.Stop] does), and
// fans their events out to subscribers from a sequence number. It is safe for concurrent
// use; Close it when done.
type Manager struct {
	o        ManagerOptions
	log      *slog.Logger
	bus      *bus
	registry *Registry
	owners   atomic.Int64 // runtimes made, for unique owner names
	jobIDs   atomic.Int64 // jobs started, for their ids
	requests requests

	// catalog is the model catalog in use: o.Models, until SetModels swaps another in.
	catalog atomic.Pointer[catalogGen]

	base   context.Context // the parent of every job; Close cancels it with ErrShutdown
	ended  chan struct{}   // closed when Close has ended every job: subscriptions end too
	cancel context.CancelCauseFunc
	jobs   sync.WaitGroup
	idle   sync.WaitGroup // the goroutine that closes idle sessions
	kick   chan struct{}  // asks it to look now
	idleMu sync.Mutex     // one closeIdle at a time: a call returns with what it closed kept

	docs     *docCache  // the documents of sessions that are not open (see doccache.go)
	below    belowTally // the approvals waiting below each session (see announceUp)
	projects sync.Map   // directory -> its project (see Manager.Project)

	mu   sync.Mutex // guards the fields below
	live map[string]*live
	// loading is closed when the session being opened is live (or failed to load).
	loading map[string]chan struct{}
	closed  bool
}

// NewManager returns the session service over o.Store.
func NewManager(o ManagerOptions) (*Manager, error) {
	if o.Store == nil || o.Models == nil {
		return nil, errors.New("sessions: a manager needs a store and a model catalog")
	}
	if o.DeltaEvery <= 0 {
		o.DeltaEvery = 40 * time.Millisecond
	}
	if o.IdleClose == 0 {
		o.IdleClose = 3 * time.Minute
	}
	if o.IdleKeep <= 0 {
		o.IdleKeep = 32
	}
	m := &Manager{o: o, log: o.Log, bus: newBus(), registry: o.Registry, kick: make(chan struct{}, 1),
		docs: newDocCache(docCacheEntries, docCacheBytes), live: map[string]*live{}, loading: map[string]chan struct{}{}}
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.registry == nil {
		m.registry = &Registry{}
	}
	m.catalog.Store(&catalogGen{models: o.Models})
	m.base, m.cancel = context.WithCancelCause(context.Background())
	m.ended = make(chan struct{})
	if o.IdleClose > 0 {
		m.idle.Go(func() { m.closeIdleEvery(m.base, min(o.IdleClose/2, time.Minute)) })
	}
	return m, nil
}

// catalogGen is one model catalog the manager used, and its generation: each SetModels
// makes the next one.
type catalogGen struct {
	models Models
	gen    uint64
}

// models returns the model catalog in use.
func (m *Manager) models() Models { return m.catalog.Load().models }

// SetModels puts models in the place of the catalog in use, without ending any work or
// tool: a changed config's models (a new entry, a gateway's new auth) take effect at once
// for new sessions and model checks, and for a session at its next job (a job that runs
// goes on with the configuration it started with). Each session keeps its system prompt's
// blocks, so its prompt cache's prefix stays.
func (m *Manager) SetModels(models Models) {
	for {
		cur := m.catalog.Load()
		if m.catalog.CompareAndSwap(cur, &catalogGen{models: models, gen: cur.gen + 1}) {
			return
		}
	}
}

// Store returns the store the sessions live in.
func (m *Manager) Store() *Store { return m.o.Store }

// CreateOptions are the choices of a new session.
type CreateOptions struct {
	Model  string // catalog key; empty means the parent's model for a fork, else the default
	Title  string
	Parent string // the parent session of a child; it must exist
	Hidden bool   // left out of ordinary listings (children are)
	// Cwd is the session's directory: an absolute path of a directory that exists (see
	// [CheckDir]). Empty means the parent's for a child, else [ManagerOptions].Dir.
	Cwd string
	// Fork seeds the child with the parent's saved conversation (its active thread), with
	// unknown outcomes for the calls that are still running there. Live tools are never
	// inherited: the child has its own.
	Fork bool
	// MaxCost is the budget of the new session's tree ([Session.MaxCost]); 0 means none
	// of its own.
	MaxCost float64

	request request // the API request that creates it (CreateRequest)
}

// Create makes a new session and returns its id: empty, or a fork of its parent. The
// model key must be in the catalog.
func (m *Manager) Create(ctx context.Context, o CreateOptions) (string, error) {
	if err := m.usable(); err != nil {
		return "", err
	}
	if o.Fork && o.Parent == "" {
		return "", errors.New("sessions: a fork needs a parent session")
	}
	if err := checkMaxCost(o.MaxCost); err != nil {
		return "", err
	}
	if o.Cwd != "" {
		dir, err := CheckDir(o.Cwd)
		if err != nil {
			return "", err
		}
		o.Cwd = dir
	}
	var seed *Thread
	if o.Parent != "" {
		if _, _, err := m.Lineage(ctx, o.Parent); errors.Is(err, ErrNotFound) {
			return "", fmt.Errorf("%w: %s", ErrParentNotFound, o.Parent)
		} else if err != nil {
			return "", err
		}
		// A tree over its budget gets no more children: each would spend more.
		if err := m.CheckBudget(ctx, o.Parent); err != nil {
			return "", err
		}
		if o.Cwd == "" {
			o.Cwd = m.parentDir(o.Parent)
		}
		if o.Fork {
			parent, st, err := m.Snapshot(ctx, o.Parent)
			if err != nil {
				return "", err
			}
			th := parent.Latest()
			seed = &Thread{ID: "t1", Reason: "fork", Entries: forkEntries(parent.ID, th), Usage: th.Usage}
			if o.Model == "" {
				o.Model = st.Model
			}
		}
	}
	key := o.Model
	if key == "" {
		key = m.models().Default()
	}
	if err := m.checkModel(key); err != nil {
		return "", err
	}
	now := time.Now().UTC()
	if o.Cwd == "" {
		o.Cwd = m.o.Dir
	}
	sess := &Session{ID: NewID(now), Created: now, Model: key, Title: Title(o.Title), Parent: o.Parent, Hidden: o.Hidden,
		Cwd: o.Cwd, RequestID: o.request.id, RequestSum: o.request.sum, MaxCost: o.MaxCost}
	if o.Parent != "" && m.o.Guard != nil {
		// A child is never freer than its parent (an agent could otherwise escape its
		// mode by starting a child): it takes the parent's mode and session rules, and
		// asks for everything when it works outside a sandboxed parent's directory.
		parent, _, err := m.Snapshot(ctx, o.Parent)
		if err != nil {
			return "", err
		}
		mode := m.o.Guard.modeOf(parent)
		if (mode == policy.Workspace || mode == policy.ReadOnly) && !policy.Inside(sess.Cwd, []string{m.dirOf(parent)}) {
			mode = policy.AskMode
		}
		sess.Mode, sess.Rules = string(mode), slices.Clone(parent.Rules)
	}
	if seed != nil {
		seed.Created, seed.Base = now, len(seed.Entries)
		sess.Threads = []*Thread{seed}
		// The parent's runtime facts in the seed name the parent's model, which would
		// otherwise be the fork's: the model it was created with is its selected one.
		sess.Selected = key
	}
	if err := m.o.Store.Create(ctx, sess); err != nil {
		return "", fmt.Errorf("%w: %w", ErrSaveFailed, err)
	}
	m.announce(sess)
	return sess.ID, nil
}

func (m *Manager) usable() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrShutdown
	}
	return nil
}

// Job is one turn or compaction running on a session.
type Job struct {
	Session string
	Kind    string // JobTurn or JobCompact
	// ID names this job among every job of the service, across restarts: a cancel that
	// names it stops it and no other (see [Manager.Cancel]).
	ID string
	// request is the API request a turn was submitted for (no id for none): a retry of
	// that request while its input is not durable yet waits for this job's acceptance.
	request request
	// queued is the queued message the turn runs (see [Queued]); set by the job itself.
	queued string

	cancel   context.CancelCauseFunc
	started  time.Time     // when it was started, for the duration its end reports
	accepted chan struct{} // closed when a turn's input is durable
	done     chan struct{} // closed when the job ended
	// stopAccepted asks for the job to be stopped as soon as its input is durable (a cancel
	// that came before); guarded by the live session's mu.
	stopAccepted bool

	// Set before accepted is closed.
	acceptedAt time.Time
	thread     string
	// Set before done is closed.
	result JobResult
	err    error
}

// JobResult is how a job ended.
type JobResult struct {
	agent.Result             // a turn's
	Compaction   *Compaction // a compaction's
}

// Done is closed when the job has ended.
func (j *Job) Done() <-chan struct{} { return j.done }

// Accepted waits until a turn's input is durable and returns its acceptance time, or the
// job's error if it ended before that.
func (j *Job) Accepted(ctx context.Context) (time.Time, error) {
	select {
	case <-j.accepted:
		return j.acceptedAt, nil
	case <-j.done:
		select {
		case <-j.accepted:
			return j.acceptedAt, nil
		default:
		}
		if j.err == nil {
			return time.Time{}, errors.New("sessions: the job ended before its input was accepted")
		}
		return time.Time{}, j.err
	case <-ctx.Done():
		return time.Time{}, context.Cause(ctx)
	}
}

// Wait waits for the job's end and returns how it ended. A job ended by [Manager.Stop]
// returns an error matching [ErrStopped]; one ended by Close, [ErrShutdown]. When ctx ends
// first, Wait returns its cause and the job goes on.
func (j *Job) Wait(ctx context.Context) (JobResult, error) {
	select {
	case <-j.done:
		return j.result, j.err
	case <-ctx.Done():
		return JobResult{}, context.Cause(ctx)
	}
}

// Submit starts a turn on session id with input as the user's message, titling an untitled
// session after it. It refuses with a [BusyError] while the session runs a job; it never
// queues. The turn runs until it ends or [Manager.Stop]: ctx bounds only the start.
func (m *Manager) Submit(ctx context.Context, id string, input ...model.Part) (*Job, error) {
	return m.submit(ctx, id, request{}, input)
}

func (m *Manager) submit(ctx context.Context, id string, req request, input []model.Part) (*Job, error) {
	return m.submitMeta(ctx, id, req, inputMeta{}, input)
}

// submitMeta is submit with the metadata changes of meta; the title of an untitled session
// is its first message's.
func (m *Manager) submitMeta(ctx context.Context, id string, req request, meta inputMeta, input []model.Part) (*Job, error) {
	if len(input) == 0 || strings.TrimSpace(model.Message{Parts: input}.Text()) == "" && !hasImage(input) {
		return nil, errors.New("sessions: the input is empty")
	}
	meta.title = Title(model.Message{Parts: input}.Text())
	return m.startOn(ctx, id, JobTurn, req, func(l *live) jobFunc {
		return func(ctx context.Context, j *Job, r *runner) (JobResult, error) {
			// An untitled session is titled after its first message, in the write that saves it.
			res, err := r.submit(ctx, req, meta, input)
			if errors.Is(err, ErrRewound) {
				err = fmt.Errorf("%w; the session was rewound to its last completed turn", err)
			}
			return JobResult{Result: res}, err
		}
	})
}

// ErrNotEditable reports an edit of an entry that is not a message a user sent in the
// session's active thread.
var ErrNotEditable = errors.New("sessions: only a message a user sent, in the active thread, can be edited and sent again")

// EditResend sends text as an edit of entry of session id's active thread, a message a user
// sent: the session goes on in a successor thread (reason "edit") that keeps the entries
// before it, and the edited message (with the attachments of the original) starts a turn
// there. The thread it was in stays, read-only, in the thread list.
func (m *Manager) EditResend(ctx context.Context, id, thread string, entry int, text string) (*Job, error) {
	return m.edit(ctx, id, thread, entry, text, false)
}

// EditRestore is [Manager.EditResend] that also puts the session's files back as they were
// before the edited message's turn ("Restore code and conversation"): every later turn's
// captured changes are taken away first, and the model is told which files changed. A
// file changed since those turns is a conflict: a [ConflictError], and nothing is sent
// (found before the job starts, or by the job as it restores).
func (m *Manager) EditRestore(ctx context.Context, id, thread string, entry int, text string) (*Job, error) {
	return m.edit(ctx, id, thread, entry, text, true)
}

func (m *Manager) edit(ctx context.Context, id, thread string, entry int, text string, restore bool) (*Job, error) {
	sess, _, err := m.Snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	th := sess.Latest()
	if th.ID != thread || !editable(th, entry) {
		return nil, fmt.Errorf("edit entry %d of thread %s of session %s: %w", entry, thread, id, ErrNotEditable)
	}
	if restore {
		l, err := m.open(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := l.rt.checkRewind(ctx, thread, entry); err != nil {
			return nil, err
		}
	}
	input := []model.Part{model.TextPart(text)}
	for _, p := range visible(th.Entries[entry].Message.Parts) {
		if p.Kind == model.KindImage || p.Kind == model.KindText && p.Name != "" {
			input = append(input, p) // an attachment
		}
	}
	return m.submitMeta(ctx, id, request{}, inputMeta{edit: &edit{thread: thread, entry: entry, restore: restore}}, input)
}

// editable reports whether entry i of th is a message a user sent.
func editable(th *Thread, i int) bool {
	return i >= 0 && i < len(th.Entries) && th.Entries[i].AcceptedAt != nil && th.Entries[i].Message.Role == model.User
}

// Retry sends session id's last turn again when it ended without an answer: a stopped,
// failed or interrupted turn runs on from its saved history ([ErrNotRetryable] otherwise);
// a rejected one, which was rewound, is submitted again as the same input.
func (m *Manager) Retry(ctx context.Context, id string) (*Job, error) {
	sess, _, err := m.Snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	switch st := sess.LastTurn(); st.Status {
	case TurnStopped, TurnFailed, TurnInterrupted:
	case TurnRejected:
		th := sess.Latest()
		for i := len(th.Entries) - 1; i >= 0; i-- {
			if e := th.Entries[i]; e.Rejected {
				return m.submit(ctx, id, request{}, visible(e.Message.Parts))
			}
		}
		return nil, fmt.Errorf("retry session %s: the rejected message is not in its latest thread: %w", id, ErrNotRetryable)
	default:
		return nil, fmt.Errorf("retry session %s (last turn %q): %w", id, st.Status, ErrNotRetryable)
	}
	return m.startOn(ctx, id, JobTurn, request{}, func(l *live) jobFunc {
		return func(ctx context.Context, j *Job, r *runner) (JobResult, error) {
			l.accept(time.Now().UTC(), "") // no input to make durable: a stop stops it at once
			res, err := r.Retry(ctx)
			return JobResult{Result: res}, err
		}
	})
}

// jobFunc is the work of a job, done with the runner the live session had when it started.
type jobFunc = func(context.Context, *Job, *runner) (JobResult, error)

// errLiveClosed reports a live session that CloseSession took out between its open and
// the start of a job on it.
var errLiveClosed = errors.New("sessions: the live session was closed")

// startOn opens session id and starts the job work(l) on it. A live session closed
// between the open and the start is opened again, so that no job runs on a runtime whose
// tools were released.
func (m *Manager) startOn(ctx context.Context, id, kind string, req request, work func(l *live) jobFunc) (*Job, error) {
	for {
		l, err := m.open(ctx, id)
		if err != nil {
			return nil, err
		}
		j, err := m.start(l, kind, req, work(l))
		if !errors.Is(err, errLiveClosed) {
			return j, err
		}
	}
}

func hasImage(parts []model.Part) bool {
	for _, p := range parts {
		if p.Kind == model.KindImage {
			return true
		}
	}
	return false
}

// Compact starts a compaction of session id's active thread into a successor thread.
func (m *Manager) Compact(ctx context.Context, id string) (*Job, error) {
	return m.startOn(ctx, id, JobCompact, request{}, func(l *live) jobFunc {
		return func(ctx context.Context, j *Job, r *runner) (JobResult, error) {
			c, err := r.Compact(ctx)
			return JobResult{Compaction: c}, err
		}
	})
}

// job returns the job running on session id in this process, or nil.
func (m *Manager) job(id string) *Job {
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.job
}

// start runs f as session l's job.
func (m *Manager) start(l *live, kind string, req request, f jobFunc) (*Job, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errLiveClosed
	}
	if l.job != nil {
		return nil, &BusyError{Session: l.id, Job: l.job.Kind}
	}
	if !m.o.Wait {
		if holder, held := m.o.Store.Holder(l.id); held {
			return nil, &BusyError{Session: l.id, Holder: holder}
		}
	}
	if err := l.prepare(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrShutdown
	}
	m.jobs.Add(1)
	m.mu.Unlock()
	ctx, cancel := context.WithCancelCause(m.base)
	j := &Job{Session: l.id, Kind: kind, ID: m.bus.boot + "-" + strconv.FormatInt(m.jobIDs.Add(1), 10), request: req, cancel: cancel,
		accepted: make(chan struct{}), done: make(chan struct{}), started: time.Now()}
	l.job = j
	r := l.runner
	busy := true
	l.publishLocked(Update{Type: UpdateState, Busy: &busy, Job: kind, JobID: j.ID})
	go func() {
		defer m.jobs.Done()
		defer cancel(nil)
		res, err := f(ctx, j, r)
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", context.Cause(ctx), err)
		}
		l.finish(j, res, err)
	}()
	return j, nil
}

// Close stops every job with [ErrShutdown] as the cause (turns end cancelled and
// checkpointed), waits for them and releases every session's tools.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	m.mu.Unlock()
	m.cancel(ErrShutdown)
	m.idle.Wait()
	m.jobs.Wait()
	m.mu.Lock()
	lives := m.live
	m.live = map[string]*live{}
	m.mu.Unlock()
	for _, l := range lives {
		l.close()
	}
	close(m.ended)
}

// CloseSession stops session id's job, if any, waits for it, and releases the session's
// tools (its bash sessions end, its read stamps are forgotten). The session stays on disk;
// its next job builds a new runtime.
func (m *Manager) CloseSession(id string) {
	m.mu.Lock()
	l := m.live[id]
	delete(m.live, id)
	m.mu.Unlock()
	if l == nil {
		return
	}
	l.mu.Lock()
	l.closed = true
	j := l.job
	l.mu.Unlock()
	if j != nil {
		j.cancel(ErrStopped)
		<-j.done
	}
	l.close()
}

// open returns the live session id, loading it and binding a runtime on first use. The
// file is read without the manager's lock (a long session takes a while, and every other
// session's Stop and Snapshot need that lock), one load per session at a time.
func (m *Manager) open(ctx context.Context, id string) (*live, error) {
	m.mu.Lock()
	for {
		if m.closed {
			m.mu.Unlock()
			return nil, ErrShutdown
		}
		if l := m.live[id]; l != nil {
			m.mu.Unlock()
			l.touch()
			return l, nil
		}
		loading := m.loading[id]
		if loading == nil {
			break
		}
		m.mu.Unlock()
		select {
		case <-loading:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		m.mu.Lock()
	}
	loaded := make(chan struct{})
	m.loading[id] = loaded
	m.mu.Unlock()
	l, err := m.bind(ctx, id)
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.loading, id)
	close(loaded)
	switch {
	case err != nil:
		return nil, err
	case m.closed:
		l.close()
		return nil, ErrShutdown
	}
	m.docs.drop(id)
	m.live[id] = l
	l.used = time.Now()
	return l, nil
}

// bind loads session id and binds a runtime to it, for [Manager.open].
func (m *Manager) bind(ctx context.Context, id string) (*live, error) {
	doc, owner, err := m.openDocument(ctx, id)
	if err != nil {
		return nil, err
	}
	if owner == "" {
		owner = fmt.Sprintf("%s/rt-%d-%d", id, os.Getpid(), m.owners.Add(1))
	}
	l := &live{m: m, id: id}
	ro := runtimeOptions{Doc: doc, Owner: owner, OnMeta: l.publishMeta, Sink: l.sink, PartialEvery: m.o.PartialEvery, Guard: m.o.Guard}
	doc.view(func(s *Session) { ro.Dir = m.dirOf(s) })
	if th := m.o.Tools; th != nil {
		ro.Tools = th.Tools(owner, ro.Dir)
		if inv, ok := th.(Inventorier); ok {
			ro.Inventory = func(ctx context.Context) (Inventory, error) { return inv.Inventory(ctx, owner) }
		}
		if sn, ok := th.(Snapshotter); ok && m.o.Snapshots.Enabled {
			ro.Snapshots, ro.SnapshotOpts = sn, m.o.Snapshots
		}
	}
	rt, err := newRuntime(ro)
	if err != nil {
		return nil, err
	}
	l.rt = rt
	l.remove = m.registry.add(rt)
	return l, nil
}
