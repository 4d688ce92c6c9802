package sessions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/hosts/tools"
	"myco.dev/internal/throttle"
)

// Errors callers branch on with errors.Is.
var (
	// ErrSaveFailed reports a session whose work stopped because a save failed (fail closed).
	ErrSaveFailed = errors.New("sessions: a save failed; this session's model and tool work is stopped")
	// ErrStaleCheckpoint reports a checkpoint of a history that is behind what is saved,
	// or of a thread that is no longer the session's latest.
	ErrStaleCheckpoint = errors.New("sessions: stale checkpoint")
	// ErrRewound reports a turn whose request was rejected, by max_request_bytes before it
	// was sent or by the model endpoint (a 400, 413 or 422, or a context overflow): the
	// thread was rewound to the last completed turn.
	ErrRewound = errors.New("sessions: the request was rejected and the turn rewound")
	// ErrNotResumable reports a Resume of a thread whose last turn ended (a cancelled turn
	// is final).
	ErrNotResumable = errors.New("sessions: no interrupted turn to resume")
	// ErrNotRetryable reports a Retry of a session whose last turn did not end without an
	// answer: it answered, or it has had none, or another job ran since.
	ErrNotRetryable = errors.New("sessions: the last turn did not fail or stop, so there is nothing to retry")
)

// AgentConfig is what the runner needs to build the agent of one run.
type AgentConfig struct {
	// Options are the agent's options: Model, APIModel, System, limits. The runner sets
	// Tools, Checkpoint and Sink itself.
	Options  agent.Options
	ModelKey string // catalog key, for the runtime facts
	Protocol string // wire protocol name, for the runtime facts
	// Endpoint is where the model is served from, which the words of its failures name.
	Endpoint Endpoint
	// ContextWindow is in tokens; 0 disables the size guard rails and auto-compaction.
	ContextWindow int
	// AutoCompactAt is the fraction of ContextWindow at which a completed answer triggers
	// compaction; 0 disables it.
	AutoCompactAt float64
	// CompactionMaxRequests caps the model requests of one compaction, retries included;
	// 0 means 64.
	CompactionMaxRequests int
	// MaxImageBase64Bytes is the model's max_image_base64_bytes: every tool call of the run
	// is held to it (tools.WithImageLimit), whatever cap the hosts were started with. 0
	// means no cap of the model's own.
	MaxImageBase64Bytes int
	// WithoutEnv names the environment variables that the processes of the run's tool
	// calls must not get (tools.WithoutEnv): the config's credential variables, as the
	// catalog has them now, so that a variable a changed config names is kept from the
	// commands that start after the change, whatever the hosts were started with.
	WithoutEnv []string
}

// runnerOptions configures a runner.
type runnerOptions struct {
	Runtime *runtime
	// Agent returns the configuration of the next run's agent. It is called once per run,
	// so a model or effort change takes effect at the next turn (and is noticed).
	Agent func() AgentConfig
	// Prelude, when set, is asked before every model step for a hidden note about prelude
	// edits; the note is added to the latest input or tool result and saved before the
	// request goes out. *workspace.Watcher satisfies it.
	Prelude PreludeWatcher
	Log     *slog.Logger // nil means slog.Default()
}

// PreludeWatcher notices prelude edits between model steps.
type PreludeWatcher interface {
	// Step returns a note for the next request on thread, or "" for none. inContext
	// reports whether that request's history still carries an earlier prelude note.
	Step(thread string, inContext bool) (string, error)
}

// preludeSource is the system-part source of prelude change notes.
const preludeSource = "prelude"

// runner owns the agent of a durable session turn: it takes the session's writer gate,
// accepts input durably, runs the agent with checkpoints after each model step and tool
// batch, records every tool call's intent before it runs and its result after, recovers
// interrupted turns, rewinds rejected ones and compacts. It is safe for concurrent use;
// its operations on one session run one at a time.
type runner struct {
	rt      *runtime
	agent   func() AgentConfig
	prelude PreludeWatcher
	log     *slog.Logger
}

// newRunner returns a runner over o.Runtime.
func newRunner(o runnerOptions) (*runner, error) {
	if o.Runtime == nil || o.Agent == nil {
		return nil, errors.New("sessions: a runner needs a runtime and an agent factory")
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	return &runner{rt: o.Runtime, agent: o.Agent, prelude: o.Prelude, log: log}, nil
}

// waiting tells the user that another holder has the session's writer gate.
func (r *runner) waiting(holder string) {
	r.rt.emit(notice{Text: fmt.Sprintf("session %s is in use by %s; waiting for it", r.rt.doc.id, holder)})
}

// Submit accepts input as a human user turn and runs the agent on it. The input is durable
// (with its acceptance time) before the model sees it. A cancelled ctx ends the turn as
// cancelled, which is final. A save error stops the session's work and returns
// [ErrSaveFailed]. A request rejected (over max_request_bytes, or refused by the model
// endpoint for what it holds) rewinds the thread and returns [ErrRewound] together with the
// cause; with auto-compaction on, a context overflow first compacts the session and runs
// the turn once more in the successor. After a completed answer above the auto-compaction
// threshold the runner compacts once and continues with a # Resumption message.
func (r *runner) Submit(ctx context.Context, input ...model.Part) (agent.Result, error) {
	return r.SubmitRequest(ctx, request{}, input...)
}

// SubmitRequest is Submit for input an API request brought: its id and digest are saved
// with the input, so that a retried request finds it accepted.
func (r *runner) SubmitRequest(ctx context.Context, req request, input ...model.Part) (agent.Result, error) {
	return r.submit(ctx, req, inputMeta{}, input)
}

// inputMeta is what the write that saves an input changes of the session's metadata too (a
// write of its own cost a start-up an fsync): a title for an untitled session, and the
// queued message ([Queued]) the input is, which leaves the queue as it is accepted.
type inputMeta struct {
	title   string
	dequeue string
	edit    *edit // the input is an edit of an earlier message: the session goes on from there
}

// edit names the message a user edited: entry of thread. With restore, the session's
// files are put back as they were before that message's turn, first; note then tells the
// model which files that changed.
type edit struct {
	thread  string
	entry   int
	restore bool
	note    string
}

// submit is SubmitRequest with the metadata changes of meta. The input of a queued message
// is the message's as the queue holds it when the writer gate is taken (an edit before
// that counts); one withdrawn by then is [ErrNotQueued], and nothing is written.
func (r *runner) submit(ctx context.Context, req request, meta inputMeta, input []model.Part) (agent.Result, error) {
	if len(input) == 0 && meta.dequeue == "" {
		return agent.Result{}, errors.New("sessions: empty input")
	}
	cfg := r.agent()
	defer r.warm(ctx, cfg)()
	if err := r.rt.acquire(ctx, r.waiting); err != nil {
		return agent.Result{}, err
	}
	defer r.rt.release()
	if err := r.rt.recover(ctx); err != nil {
		return agent.Result{}, err
	}
	doc := r.rt.doc
	if r.rt.snaps != nil {
		if err := r.rt.finishRestore(ctx); err != nil {
			r.log.Warn("a restore of the session's files that a stop cut short could not be completed", "session_id", doc.id, "err", err)
		}
	}
	if meta.edit != nil && meta.edit.restore {
		if err := r.rewindFiles(ctx, meta.edit); err != nil {
			return agent.Result{}, err
		}
	}
	if meta.edit != nil {
		if err := r.editFrom(ctx, *meta.edit); err != nil {
			return agent.Result{}, err
		}
	}
	if meta.dequeue != "" {
		var q Queued
		var ok bool
		doc.view(func(s *Session) { q, ok = s.queued(meta.dequeue) })
		if !ok {
			return agent.Result{}, fmt.Errorf("session %s, queued message %s: %w", doc.id, meta.dequeue, ErrNotQueued)
		}
		input = q.Parts
		if meta.title == "" {
			meta.title = Title(q.Text())
		}
	}
	th := doc.latest()
	now := r.rt.now().UTC()
	entry := Entry{Message: model.Message{Role: model.User}, AcceptedAt: &now, RequestID: req.id, RequestSum: req.sum}
	facts := r.rt.observe(ctx, cfg)
	var prev *Facts
	doc.view(func(*Session) { prev = th.Facts() })
	if prev == nil || !sameFacts(prev, facts) {
		entry.Message.Parts = append(entry.Message.Parts, model.SystemPart("runtime", factsText(facts, prev)))
		entry.Facts = facts
	}
	entry.Message.Parts = append(entry.Message.Parts, input...)
	if meta.edit != nil && meta.edit.note != "" {
		entry.Message.Parts = append(entry.Message.Parts, model.SystemPart(filesSource, meta.edit.note))
	} else if r.rt.snaps != nil {
		r.rt.withFilesNote(th, &entry)
	}
	changed := false
	var change func(*Session)
	if meta.title != "" || meta.dequeue != "" {
		change = func(s *Session) {
			if s.Title == "" && meta.title != "" {
				s.Title, changed = meta.title, true
			}
			if meta.dequeue != "" {
				s.Queue = slices.DeleteFunc(slices.Clone(s.Queue), func(q Queued) bool { return q.ID == meta.dequeue })
				changed = true
			}
		}
	}
	n, err := doc.checkpointMeta(ctx, th, entry, change)
	if err := r.rt.save(err); err != nil {
		return agent.Result{}, err
	}
	if changed && r.rt.onMeta != nil {
		r.rt.onMeta()
	}
	start := n - 1
	r.rt.emit(accepted{Thread: th.ID, Index: start, At: now, Text: model.Message{Parts: input}.Text()})
	res, err := r.run(ctx, cfg, th, start, runAfter{})
	if err != nil && overflowed(err) && r.autoCompacts(cfg) {
		return r.retryCompacted(ctx, cfg, entry, input, res, err)
	}
	if err != nil {
		return res, err
	}
	return r.maybeAutoCompact(ctx, cfg, res)
}

// editFrom starts a successor of the active thread that keeps its entries before the
// edited message, where the edit then runs as a turn; the page follows it as after a rewind.
func (r *runner) editFrom(ctx context.Context, e edit) error {
	th := r.rt.doc.latest()
	var ok bool
	r.rt.doc.view(func(*Session) { ok = th.ID == e.thread && editable(th, e.entry) })
	if !ok {
		return fmt.Errorf("edit entry %d of thread %s: %w", e.entry, e.thread, ErrNotEditable)
	}
	old := r.rt.doc.copyOf(th).Entries
	nt := &Thread{ID: r.rt.doc.nextThreadID(), Created: r.rt.now().UTC(), Reason: "edit", Entries: append([]Entry(nil), old[:e.entry]...)}
	nt.scan()
	if err := r.rt.save(r.rt.doc.startThread(ctx, nt, e.entry)); err != nil {
		return err
	}
	r.rt.emit(rewound{From: th.ID, To: nt.ID})
	return nil
}

// warm opens the model's connection (its TLS handshake included) while the turn's input is
// made durable, when the model can ([model.Warmer]): the request itself goes out only once
// the input is saved, but need not wait for the dial. It returns the wait for it.
func (r *runner) warm(ctx context.Context, cfg AgentConfig) (wait func()) {
	w, ok := cfg.Options.Model.(model.Warmer)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	var wg sync.WaitGroup
	wg.Go(func() { w.Warm(ctx) })
	return func() {
		cancel()
		wg.Wait()
	}
}

// overflowed reports a turn that was rewound because the model's context window does not
// hold its request.
func overflowed(err error) bool {
	pe, ok := errors.AsType[*model.ProviderError](err)
	return ok && errors.Is(err, ErrRewound) && pe.Overflow()
}

// autoCompacts reports whether the session compacts on its own: auto_compact_at is set
// and a failure has not turned it off.
func (r *runner) autoCompacts(cfg AgentConfig) bool {
	return cfg.AutoCompactAt > 0 && cfg.ContextWindow > 0 && !r.rt.autoCompactOff()
}

// retryCompacted runs a turn whose request overflowed the context window (and was rewound)
// once more: it compacts the session, as /compact does, and submits the same input (the
// same acceptance, the same request) in the successor. A second overflow is rewound again
// and ends the turn with a message that says so; a compaction that fails leaves the first
// rejection standing.
func (r *runner) retryCompacted(ctx context.Context, cfg AgentConfig, entry Entry, input []model.Part, res agent.Result, overflow error) (agent.Result, error) {
	r.rt.emit(notice{Text: "the conversation does not fit in the model's context window: compacting the session and sending the message again"})
	if _, err := r.compact(ctx, cfg, true, false); err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrSaveFailed) {
			return res, err
		}
		r.rt.emit(notice{Text: "the compaction failed, so the message was not sent again: " + cause(err)})
		return res, overflow
	}
	th := r.rt.doc.latest()
	again := Entry{Message: model.Message{Role: model.User, Parts: input}, AcceptedAt: entry.AcceptedAt, RequestID: entry.RequestID, RequestSum: entry.RequestSum}
	n, err := r.append(ctx, th, again)
	if err != nil {
		return res, err
	}
	r.rt.emit(accepted{Thread: th.ID, Index: n - 1, At: *entry.AcceptedAt, Text: model.Message{Parts: input}.Text()})
	next, err := r.run(ctx, cfg, th, n-1, runAfter{compacted: true, overflowed: true})
	next.Usage = next.Usage.Add(res.Usage)
	next.Steps += res.Steps
	if err != nil {
		return next, err
	}
	return r.maybeAutoCompact(ctx, cfg, next)
}

// Resume continues the latest thread's interrupted turn (one cut by a crash), without new
// input. A turn that ended, including one the user cancelled, is not resumed:
// [ErrNotResumable].
func (r *runner) Resume(ctx context.Context) (agent.Result, error) { return r.again(ctx, false) }

// RetryPrompt begins the hidden note a retry of a stopped or failed turn gives the model.
const RetryPrompt = "# Retry\n\n"

// Retry runs the latest thread's last turn again, without new input, when it ended without
// an answer: an interrupted turn (cut by a crash) is resumed; a stopped or failed one goes
// on from its saved history, after a hidden note that tells the model the earlier attempt
// broke off and why. Any other state is [ErrNotRetryable] (a rejected turn is sent again as
// new input, by [Manager.Retry]).
func (r *runner) Retry(ctx context.Context) (agent.Result, error) { return r.again(ctx, true) }

// again runs the latest thread's last turn on, without new input: an interrupted one, and,
// for a retry, a stopped or failed one (see [runner.Retry]).
func (r *runner) again(ctx context.Context, retry bool) (agent.Result, error) {
	if err := r.rt.acquire(ctx, r.waiting); err != nil {
		return agent.Result{}, err
	}
	defer r.rt.release()
	if err := r.rt.recover(ctx); err != nil {
		return agent.Result{}, err
	}
	th := r.rt.doc.latest()
	var st TurnState
	var interrupted bool
	start := 0
	r.rt.doc.view(func(s *Session) {
		st, interrupted = s.LastTurn(), th.Interrupted()
		for i := len(th.Entries) - 1; i >= 0; i-- {
			if turnStart(th.Entries[i]) {
				start = i
				break
			}
		}
	})
	switch {
	case interrupted:
	case !retry:
		return agent.Result{}, fmt.Errorf("resume thread %s (last turn %q): %w", th.ID, st.Status, ErrNotResumable)
	case st.Thread != th.ID || st.Status != TurnStopped && st.Status != TurnFailed:
		return agent.Result{}, fmt.Errorf("retry session %s (last turn %q): %w", r.rt.doc.id, st.Status, ErrNotRetryable)
	}
	var note []Entry
	if !interrupted {
		how := "was stopped by the user"
		if st.Status == TurnFailed {
			how = "failed: " + st.Error
		}
		note = append(note, Entry{Message: model.Message{Role: model.User, Parts: []model.Part{model.TextPart(RetryPrompt +
			"The user asked to retry: the previous attempt at this turn " + how + ". Continue the task from where it stopped. " +
			"Calls whose outcome is unknown may have taken effect: inspect their effects before running them again.")}}, Continuation: true})
	}
	n, err := r.append(ctx, th, note...) // with the recovered tool results of an interrupted turn
	if err != nil {
		return agent.Result{}, err
	}
	if len(note) > 0 {
		start = n - 1
	}
	return r.run(ctx, r.agent(), th, start, runAfter{})
}

// append saves entries (and anything recovery made) to th, failing the session closed on
// error, and returns the number of th's entries.
func (r *runner) append(ctx context.Context, th *Thread, entries ...Entry) (int, error) {
	n, err := r.rt.doc.checkpoint(ctx, th, entries, nil)
	return n, r.rt.save(err)
}

// runAfter says what a submission did before a run.
type runAfter struct {
	// compacted: this submission compacted the session into the run's thread already (the
	// loop guard of auto-compaction between tool rounds watches it).
	compacted bool
	// overflowed: the run sends again, after a compaction, a message whose request
	// overflowed the context window (a second overflow says so).
	overflowed bool
}

// run runs the agent on th, whose turn began at entry start, and records how it ended.
func (r *runner) run(ctx context.Context, cfg AgentConfig, th *Thread, start int, after runAfter) (agent.Result, error) {
	view := r.rt.doc.history(th)
	tn := newTurn(r, th, view)
	tn.start, tn.cfg, tn.compacted = start, cfg, after.compacted
	r.rt.doc.view(func(*Session) { tn.before = th.Usage })
	o := cfg.Options
	o.Tools = nil
	if r.rt.tools != nil {
		o.Tools = &recorder{r: r, tn: tn, tools: r.rt.tools}
	}
	o.Checkpoint = tn.checkpoint
	o.Sink = tn.sink
	o.BeforeStep = tn.beforeStep(o.BeforeStep)
	o.AfterBatch = tn.afterBatch
	if rt := r.rt; rt.snaps != nil {
		tn.caps = &captures{snaps: rt.snaps, o: rt.snapOpts, session: rt.doc.id, dir: rt.dir, tooLarge: &rt.tooLarge}
		o.AroundBatch = tn.aroundBatch
	}
	if o.Log == nil {
		o.Log = r.log
	}
	_, res, err := agent.New(o).Run(ctx, view)
	th, start = tn.th, tn.start // a compaction between tool rounds moved the turn
	bg := context.WithoutCancel(ctx)
	switch {
	case r.rt.Err() != nil:
		return res, fmt.Errorf("session %s: %w: %w", r.rt.doc.id, ErrSaveFailed, err)
	case err == nil:
		err := r.end(bg, th, TurnDone, nil)
		if err == nil {
			r.rt.prune(bg, r.log.Info)
		}
		return res, err
	case rejected(err):
		if pe, ok := errors.AsType[*model.ProviderError](err); ok && pe.Overflow() && after.overflowed {
			err = &overflowAgainError{err}
		}
		if rerr := r.rewind(bg, th, start, tn.before, err); rerr != nil {
			return res, rerr
		}
		return res, fmt.Errorf("%w: %w", ErrRewound, err)
	case ctx.Err() != nil:
		if perr := tn.keepPartial(bg, PartialStopped); perr != nil {
			return res, perr
		}
		if eerr := r.end(bg, th, TurnCancelled, context.Cause(ctx)); eerr != nil {
			return res, eerr
		}
		return res, err
	default:
		if perr := tn.keepPartial(bg, PartialFailed); perr != nil {
			return res, perr
		}
		if eerr := r.end(bg, th, TurnFailed, err); eerr != nil {
			return res, eerr
		}
		return res, err
	}
}

// rejected reports a request that sending again would not help: over max_request_bytes,
// or refused by the model endpoint for what it holds ([model.ProviderError.Rejected]).
func rejected(err error) bool {
	if _, ok := errors.AsType[*model.RequestTooLargeError](err); ok {
		return true
	}
	pe, ok := errors.AsType[*model.ProviderError](err)
	return ok && pe.Rejected()
}

// end records how th's turn ended; cause, for an end that is not an answer, is described
// in the record for the person who reads it.
func (r *runner) end(ctx context.Context, th *Thread, status string, cause error) error {
	return r.rt.save(r.rt.doc.endTurn(ctx, th, status, Describe(cause)))
}

// rewind ends th's turn as rejected and starts a successor that keeps th's entries before
// start, with their context use (usage): the completed turns stay active, the rejected
// turn's observations stay in th. The successor shows the rejected input after them, marked
// as rejected and never sent again, and ends there as rejected with the reason, so that the
// transcript and the snapshot show what happened, also after a reload.
func (r *runner) rewind(ctx context.Context, th *Thread, start int, usage model.Usage, cause error) error {
	if err := r.end(ctx, th, TurnRejected, cause); err != nil {
		return err
	}
	old := r.rt.doc.copyOf(th).Entries
	nt := &Thread{ID: r.rt.doc.nextThreadID(), Created: r.rt.now().UTC(), Reason: "rewind", Usage: usage,
		Entries: append([]Entry(nil), old[:start]...)}
	if in := old[start]; in.AcceptedAt != nil {
		nt.Entries = append(nt.Entries, Entry{Message: model.Message{Role: model.User, Parts: visible(in.Message.Parts)},
			AcceptedAt: in.AcceptedAt, RequestID: in.RequestID, RequestSum: in.RequestSum, Rejected: true})
	}
	nt.scan() // before the session shows it: a snapshot may read it at once
	if err := r.rt.save(r.rt.doc.startThread(ctx, nt, start)); err != nil {
		return err
	}
	if err := r.end(ctx, nt, TurnRejected, cause); err != nil {
		return err
	}
	r.rt.emit(rewound{From: th.ID, To: nt.ID, Err: cause})
	return nil
}

// visible returns parts without the hidden system parts.
func visible(parts []model.Part) []model.Part {
	out := make([]model.Part, 0, len(parts))
	for _, p := range parts {
		if p.Kind != model.KindSystem {
			out = append(out, p)
		}
	}
	return out
}

// turn is the checkpoint state of one agent run. Its fields other than usage belong to
// the run's goroutine: the agent calls checkpoint, BeforeStep and AfterBatch from it, and
// the tool calls of a batch, which read th, run only between those calls.
type turn struct {
	r     *runner
	cfg   AgentConfig
	th    *Thread // the thread the turn is on; compaction between tool rounds replaces it
	start int     // the entry of th that starts the turn
	// before is th's context use when the turn began, which a rewind to before the turn
	// carries over; compacted says that this submission compacted the session into th.
	before    model.Usage
	compacted bool
	saved     int // messages of the run's history already on disk
	// lastParts is how many parts of the last saved message are on disk; a hook before a
	// model step may add more.
	lastParts int

	// caps captures the session's files around each batch; nil when they are not.
	caps *captures

	mu    sync.Mutex // guards usage
	usage *model.Usage

	// What has streamed of the step under way (its text and thinking), for the partial
	// answer a stop or a failure keeps; when it began streaming and was last saved.
	text, thinking strings.Builder
	streamStart    time.Time
	partialSaved   time.Time
}

// Partial answers: what streamed of a step is saved for a crash once it has streamed for
// partialEvery (the runtime's, by default this), then at most as often, up to maxPartial
// bytes.
const (
	partialEvery = 2 * time.Second
	maxPartial   = 256 << 10
)

// newTurn returns the checkpoint state of a run on th whose history view is on disk.
func newTurn(r *runner, th *Thread, view []model.Message) *turn {
	return &turn{r: r, th: th, saved: len(view), lastParts: partsOfLast(view)}
}

func (tn *turn) sink(ev agent.Event) {
	switch ev := ev.(type) {
	case agent.StepDone:
		tn.mu.Lock()
		u := ev.Usage
		tn.usage = &u
		tn.mu.Unlock()
		tn.text.Reset()
		tn.thinking.Reset()
		tn.streamStart = time.Time{}
	case agent.TextDelta:
		tn.streamed(&tn.text, ev.Text)
	case agent.ThinkingDelta:
		tn.streamed(&tn.thinking, ev.Text)
	}
	tn.r.rt.emit(agentEvent{Event: ev})
}

// streamed follows what streams of the step under way; now and then it saves it, so that
// a crash loses none of what a person saw (see [Entry.Partial]).
func (tn *turn) streamed(b *strings.Builder, delta string) {
	if b.Len()+len(delta) <= maxPartial {
		b.WriteString(delta)
	}
	now := time.Now()
	if tn.streamStart.IsZero() {
		tn.streamStart, tn.partialSaved = now, now
		return
	}
	if now.Sub(tn.partialSaved) < tn.r.rt.partial {
		return
	}
	tn.partialSaved = now
	rt := tn.r.rt
	if rt.stopped() == nil {
		rt.save(rt.doc.recordPartial(&partialRec{Thread: tn.th.ID, Text: tn.text.String(), Thinking: tn.thinking.String(), At: now.UTC()}))
	}
}

// keepPartial saves what streamed of the step a stop or a failure cut short, as an entry a
// person sees and the model never does.
func (tn *turn) keepPartial(ctx context.Context, how string) error {
	if tn.text.Len() == 0 && tn.thinking.Len() == 0 {
		return nil
	}
	e := partialEntry(tn.text.String(), tn.thinking.String(), how)
	tn.text.Reset()
	tn.thinking.Reset()
	n, err := tn.r.append(ctx, tn.th, e)
	if err == nil {
		tn.r.rt.emit(checkpointed{Thread: tn.th.ID, First: n - 1, Messages: n}) // the pages show it in place of the live text
	}
	return err
}

// checkpoint appends what the agent added since the last checkpoint, with the latest
// usage. It refuses a stale history and fails the session closed on a save error.
func (tn *turn) checkpoint(ctx context.Context, history []model.Message) error {
	rt := tn.r.rt
	if err := rt.stopped(); err != nil {
		return err
	}
	// Only this turn starts threads, so the thread cannot be replaced after this check.
	if rt.doc.latest() != tn.th {
		return fmt.Errorf("checkpoint of thread %s, which is no longer the latest: %w", tn.th.ID, ErrStaleCheckpoint)
	}
	if len(history) < tn.saved {
		return fmt.Errorf("checkpoint of %d messages, %d already saved: %w", len(history), tn.saved, ErrStaleCheckpoint)
	}
	if tn.saved > 0 {
		if last := history[tn.saved-1].Parts; len(last) > tn.lastParts {
			if err := rt.save(rt.doc.amend(ctx, tn.th, last[tn.lastParts:])); err != nil {
				return err
			}
			tn.lastParts = len(last)
		}
	}
	entries := make([]Entry, 0, len(history)-tn.saved)
	for _, m := range history[tn.saved:] {
		entries = append(entries, Entry{Message: m})
	}
	var caps []Capture
	if tn.caps != nil {
		if caps = tn.caps.take(); len(caps) > 0 && len(entries) > 0 {
			entries[len(entries)-1].Snapshots = caps
		}
	}
	tn.mu.Lock()
	u := tn.usage
	tn.usage = nil
	tn.mu.Unlock()
	n, err := rt.doc.checkpointBy(ctx, tn.th, entries, u, tn.cfg.ModelKey)
	if err := rt.save(err); err != nil {
		return err
	}
	tn.saved, tn.lastParts = len(history), partsOfLast(history)
	rt.emit(checkpointed{Thread: tn.th.ID, First: n - len(entries), Messages: n})
	if len(caps) > 0 {
		tn.changed(context.WithoutCancel(ctx), caps) // a stopped batch's changes too
	}
	return nil
}

// beforeStep returns the agent's BeforeStep: next (the configured one, if any), then the
// prelude watcher's note on the last message.
func (tn *turn) beforeStep(next func(context.Context, []model.Message) []model.Message) func(context.Context, []model.Message) []model.Message {
	w := tn.r.prelude
	if w == nil {
		return next
	}
	return func(ctx context.Context, h []model.Message) []model.Message {
		if next != nil {
			h = next(ctx, h)
		}
		if len(h) == 0 {
			return h
		}
		note, err := w.Step(tn.th.ID, carries(h, preludeSource))
		if err != nil {
			tn.r.log.Warn("prelude scan failed; the last snapshot stands until the next step", "session_id", tn.r.rt.doc.id, "err", err)
			return h
		}
		if note == "" {
			return h
		}
		last := h[len(h)-1]
		last.Parts = append(append([]model.Part(nil), last.Parts...), model.SystemPart(preludeSource, note))
		return append(h[:len(h)-1:len(h)-1], last)
	}
}

// carries reports whether h holds a hidden system part from source.
func carries(h []model.Message, source string) bool {
	for i := len(h) - 1; i >= 0; i-- {
		for _, p := range h[i].Parts {
			if p.Kind == model.KindSystem && p.System == source {
				return true
			}
		}
	}
	return false
}

func partsOfLast(h []model.Message) int {
	if len(h) == 0 {
		return 0
	}
	return len(h[len(h)-1].Parts)
}

// recorder wraps the runtime's tools: each call's intent is durable before it runs, and
// its result as soon as it returns. No call runs once a save has failed.
type recorder struct {
	r     *runner
	tn    *turn
	tools Tools
}

func (rc *recorder) Specs() []model.ToolSpec { return rc.tools.Specs() }

func (rc *recorder) Call(ctx context.Context, call model.ToolCall) model.ToolResult {
	rt := rc.r.rt
	if err := rt.stopped(); err != nil {
		return model.ToolResult{CallID: call.ID, IsError: true, Text: "not run: " + err.Error()}
	}
	th := rc.tn.th // set between batches only
	g := rc.gate(ctx, call)
	if g.res != nil {
		return *g.res
	}
	ctx = g.ctx
	rt.usedTool()
	in := &intentRec{Thread: th.ID, Call: call, Host: hostOf(call.Input), Started: rt.now().UTC()}
	if err := rt.save(rt.doc.recordIntent(th, in)); err != nil {
		return model.ToolResult{CallID: call.ID, IsError: true, Text: "not run: its start could not be saved, so the session stopped: " + err.Error()}
	}
	pr := &throttle.Latest{Every: progressEvery, Send: func(tail string) { rc.saveProgress(th, call.ID, tail) }}
	ctx = tools.WithImageLimit(ctx, tools.ImageLimit{MaxBase64Bytes: rc.tn.cfg.MaxImageBase64Bytes, Model: rc.tn.cfg.ModelKey})
	ctx = tools.WithoutEnv(ctx, rc.tn.cfg.WithoutEnv)
	res := rc.tools.Call(tools.WithProgress(ctx, pr.Report), call)
	pr.Stop(false) // the result supersedes its progress
	res.CallID = call.ID
	if ctx.Err() != nil {
		res = stoppedResult(call.ID, res.Text)
	}
	rt.save(rt.doc.recordResult(th, &resultRec{Thread: th.ID, Result: res, Finished: time.Now().UTC()}))
	return res
}
