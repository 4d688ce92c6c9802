package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"
)

// live is a session open in a [Manager]: its runtime (the live tools, kept across threads
// and model switches), its runner, and its running job.
type live struct {
	m      *Manager
	id     string
	rt     *runtime
	remove func() // takes the runtime out of the registry

	mu sync.Mutex // guards the fields below
	// runner runs the jobs; it is rebuilt with the prompt when the model changes.
	runner *runner
	model  string      // the catalog key runner was built for
	cfg    AgentConfig // its agent configuration
	blocks []string    // the system prompt's blocks runner was built with
	gen    uint64      // the generation of the catalog cfg came from (see Manager.SetModels)
	job    *Job
	closed bool // CloseSession took it out: a job must not start on it
	// failed is how the last turn job ended when the document could not record it (a save
	// failed) or it ended before its input was durable; nil otherwise. The next turn job
	// clears it.
	failed *TurnState
	used   time.Time // when it was last opened, or its last job ended
	// Delta coalescing: deltas published less than DeltaEvery after the last one wait in
	// pending, and a timer publishes them.
	pending   *Update
	lastDelta time.Time
	timer     *time.Timer
	// streamed is the response streaming now, as published (see Manager.Streaming).
	streamed streamed
}

// prepare builds the runner for the session's current model, reading the prompt blocks
// again when the model changed (a model switch re-reads the prelude). Call with l.mu held.
func (l *live) prepare() error {
	cat := l.m.catalog.Load()
	var key string
	l.rt.View(func(s *Session) { key = s.ModelKey() })
	if key == "" {
		key = cat.models.Default()
	}
	if l.runner != nil && key == l.model {
		if l.gen == cat.gen {
			return nil
		}
		// The config changed (Manager.SetModels): the same model, as the new catalog has
		// it, with the prompt's blocks and the runner (its prelude watcher) kept.
		cfg, err := cat.models.Agent(key, l.blocks)
		if err != nil {
			return l.agentError(err)
		}
		l.cfg, l.gen = l.withBudget(withEndpoint(cfg)), cat.gen
		return nil
	}
	var blocks []string
	var watcher PreludeWatcher
	if l.m.o.Prompt != nil {
		var err error
		if blocks, watcher, err = l.m.o.Prompt(l.rt.dir); err != nil {
			return fmt.Errorf("session %s: build the system prompt: %w", l.id, err)
		}
	}
	cfg, err := cat.models.Agent(key, blocks)
	if err != nil {
		return l.agentError(err)
	}
	r, err := newRunner(runnerOptions{Runtime: l.rt, Agent: l.agentConfig, Prelude: watcher, Log: l.m.log})
	if err != nil {
		return err
	}
	l.runner, l.model, l.cfg, l.blocks, l.gen = r, key, l.withBudget(withEndpoint(cfg)), blocks, cat.gen
	return nil
}

// withBudget makes cfg's model ask, before every request, whether the session's tree is
// within its budget ([Manager.CheckBudget]).
func (l *live) withBudget(cfg AgentConfig) AgentConfig {
	if cfg.Options.Model != nil {
		cfg.Options.Model = budgeted{Model: cfg.Options.Model, check: func(ctx context.Context) error { return l.m.CheckBudget(ctx, l.id) }}
	}
	return cfg
}

// agentError is the error of a catalog that could not give the session's model.
func (l *live) agentError(err error) error {
	if u, ok := errors.AsType[unknownModel](err); ok {
		k, known := u.UnknownModel()
		return &UnknownModelError{Session: l.id, Key: k, Known: known}
	}
	return fmt.Errorf("session %s: %w", l.id, err)
}

// unknownModel is an error of a model catalog (config's UnknownModelError) that reports a
// key it does not have, with the keys it has.
type unknownModel interface {
	error
	UnknownModel() (key string, known []string)
}

func (l *live) agentConfig() AgentConfig {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg
}

// sink publishes the runner's events.
func (l *live) sink(ev event) {
	u, ok := updateOf(ev)
	if !ok {
		return
	}
	if a, ok := ev.(accepted); ok {
		l.accept(a.At, a.Thread)
	}
	if u.Type == UpdateStep && u.Usage != nil {
		l.mu.Lock()
		key := l.model
		l.mu.Unlock()
		c := l.m.usageCost(key, *u.Usage).API()
		u.Cost = &c
	}
	l.publish(u)
	if u.Type == UpdateApprovalRequested || u.Type == UpdateApprovalResolved {
		l.m.announceUp(l.id, u)
	}
}

// accept marks the turn running on l as accepted (its input durable, or it has none), at
// at on thread: from then on a stop stops it, and a stop asked for before, now.
func (l *live) accept(at time.Time, thread string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	j := l.job
	if j == nil || j.Kind != JobTurn || isClosed(j.accepted) {
		return
	}
	j.acceptedAt, j.thread = at, thread
	close(j.accepted)
	if j.stopAccepted {
		j.cancel(ErrStopped)
	}
}

func (l *live) publish(u Update) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.publishLocked(u)
}

// publishLocked publishes u on the bus, coalescing deltas: the first delta after a quiet
// DeltaEvery goes out at once, the ones that follow within it are joined and go out when it
// has passed (or before the next other event). Call with l.mu held.
func (l *live) publishLocked(u Update) {
	u.Session = l.id
	if u.Time.IsZero() {
		u.Time = time.Now().UTC()
	}
	every := l.m.o.DeltaEvery
	if u.delta() {
		since := time.Since(l.lastDelta)
		switch {
		case l.pending == nil && since >= every:
			l.lastDelta = time.Now()
			l.emit(u)
		case l.pending != nil && l.pending.Type == u.Type:
			l.pending.Text += u.Text
		default:
			l.flushLocked()
			l.pending = &u
			if l.timer == nil {
				l.timer = time.AfterFunc(max(0, every-time.Since(l.lastDelta)), l.flushTimer)
			}
		}
		return
	}
	l.flushLocked()
	l.emit(u)
}

// emit publishes u on the bus and follows the streaming response. Call with l.mu held.
func (l *live) emit(u Update) {
	l.streamed.note(l.m.bus.publish(u))
}

func (l *live) flushLocked() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if l.pending == nil {
		return
	}
	l.lastDelta = time.Now()
	l.emit(*l.pending)
	l.pending = nil
}

func (l *live) flushTimer() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timer = nil
	l.flushLocked()
}

// finish records how job j ended and publishes it: one terminal update, then the state.
func (l *live) finish(j *Job, res JobResult, err error) {
	j.result, j.err = res, err
	end := Update{Job: j.Kind, Duration: time.Since(j.started).Seconds()}
	switch {
	case err == nil && j.Kind == JobCompact:
		end.Type, end.From, end.To = UpdateDone, res.Compaction.From, res.Compaction.To
		end.Text = fmt.Sprintf("compacted thread %s into %s", res.Compaction.From, res.Compaction.To)
	case err == nil:
		u := res.Usage
		end.Type, end.Text, end.Stop, end.Usage, end.Steps, end.CapReached = UpdateDone, res.Answer, string(res.Stop), &u, res.Steps, res.CapReached
		l.mu.Lock()
		key := l.model
		l.mu.Unlock()
		c := l.m.usageCost(key, u).API()
		end.Cost = &c
	case errors.Is(err, ErrStopped) || errors.Is(err, ErrShutdown):
		end.Type = UpdateCancelled
	default:
		end.Type = UpdateError
	}
	if err != nil {
		f := Describe(err)
		end.Code, end.Error, end.Detail = f.Code, f.Message, f.Detail
	}
	l.logEnd(j, err)
	var failed *TurnState
	// A queued message withdrawn just before its turn started: nothing ran, nothing to say.
	withdrawn := errors.Is(err, ErrNotQueued)
	if j.Kind == JobTurn && err != nil && !withdrawn && (errors.Is(err, ErrSaveFailed) || !isClosed(j.accepted)) {
		failed = &TurnState{Status: TurnFailed, Code: end.Code, Error: end.Error, Detail: end.Detail, Thread: j.thread, At: time.Now().UTC()}
	}
	l.mu.Lock()
	l.job = nil
	l.used = time.Now()
	if j.Kind == JobTurn {
		l.failed = failed
	}
	if !withdrawn {
		l.publishLocked(end)
	}
	idle := false
	l.publishLocked(Update{Type: UpdateState, Busy: &idle, Job: j.Kind, JobID: j.ID})
	l.mu.Unlock()
	close(j.done)
	// The queue runs on; but a queued message that could not even start (its model is
	// gone, say) waits for the user, rather than failing again and again.
	if !errors.Is(err, ErrShutdown) && (j.queued == "" || isClosed(j.accepted) || withdrawn) {
		l.m.RunQueued(context.Background(), l.id)
	}
	l.m.idleCheck()
}

// logEnd leaves one log line, with the session id, for a job that failed or whose save
// failed: the job's error is published to the front ends and logged here, nowhere else. A
// job that was stopped or shut down is not a failure, unless a save failed as it ended.
func (l *live) logEnd(j *Job, err error) {
	switch {
	case err == nil:
	case errors.Is(err, ErrSaveFailed):
		l.m.log.Error("save failed; the session's model and tool work is stopped", "session_id", l.id, "job", j.Kind, "err", err)
	case errors.Is(err, ErrStopped) || errors.Is(err, ErrShutdown) || errors.Is(err, ErrNotQueued):
	default:
		l.m.log.Warn(j.Kind+" failed", "session_id", l.id, "code", ErrorCode(err), "err", err)
	}
}

// ErrorCode names the kind of a job's error for front ends and the API: one of [Kinds],
// or "busy".
func ErrorCode(err error) string { return Describe(err).Code }

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// publishMeta publishes the session's metadata.
func (l *live) publishMeta() {
	var u Update
	l.rt.View(func(s *Session) { u = metaUpdate(s) })
	l.publish(u)
}

func metaUpdate(s *Session) Update {
	title, archived := s.Title, s.Archived
	return Update{Type: UpdateMeta, Title: &title, Archived: &archived, Model: s.ModelKey()}
}

// close flushes the session's pending deltas and releases its tools.
func (l *live) close() {
	l.mu.Lock()
	l.flushLocked()
	l.mu.Unlock()
	l.remove()
	if r, ok := l.m.o.Tools.(Releaser); ok {
		r.Release(l.rt.owner)
	}
	if g := l.m.o.Guard; g != nil {
		// The sandbox's private temporary directory goes with the tools that used it.
		os.RemoveAll(g.tmpPath(l.id))
	}
}

// Title derives a session title from a prompt: its first non-empty line, with control
// characters made spaces, at most 80 characters.
func Title(prompt string) string {
	line := ""
	for l := range strings.SplitSeq(prompt, "\n") {
		if strings.TrimSpace(l) != "" {
			line = l
			break
		}
	}
	line = strings.Join(strings.FieldsFunc(line, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if r := []rune(line); len(r) > 80 {
		line = string(r[:79]) + "…"
	}
	return line
}
