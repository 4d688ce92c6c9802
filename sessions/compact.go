package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"myco.dev/agent"
	"myco.dev/agent/model"
)

// ErrCompactionLoop reports a compaction refused by the guard rails: the successor would
// start above half the context window, or the thread was compacted only a few steps ago (by
// the same turn, for auto-compaction between tool rounds; at all, for /compact). Compacting
// again would loop; the user has to decide what to drop.
var ErrCompactionLoop = errors.New("sessions: compaction would loop")

// compactionLoopError is a compaction the guard rails refused, in words that say why and
// what to do; it matches [ErrCompactionLoop].
type compactionLoopError struct{ msg string }

func (e *compactionLoopError) Error() string { return e.msg }
func (e *compactionLoopError) Unwrap() error { return ErrCompactionLoop }

// tooSoon is the refusal to compact thread id again n model steps after its compaction:
// asked for (auto false), or because the context filled up again within the same turn
// (auto), which stops the run.
func tooSoon(id string, n int, auto bool) error {
	ago := "just now, before any model step"
	if n > 0 {
		ago = fmt.Sprintf("only %d model step%s ago", n, plural(n))
	}
	if auto {
		return &compactionLoopError{fmt.Sprintf("thread %s was compacted %s, in this turn, and its context is near the window again; "+
			"compacting it again would loop, so the turn stops here. Split the work: start a new session for the rest, "+
			"or switch to a model with a larger context window", id, ago)}
	}
	return &compactionLoopError{fmt.Sprintf("thread %s was compacted %s; compacting it again now would only summarise "+
		"its summary. Go on working in the session: it can be compacted after %d more model step%s",
		id, ago, compactGuardSteps-n, plural(compactGuardSteps-n))}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

const (
	// compactGuardSteps is how many model steps a compacted thread must take before it may
	// be compacted again.
	compactGuardSteps = 3
	// recentTurns and recentShare bound the raw recent context a successor keeps: at most
	// that many turns, within that share of the window.
	recentTurns = 4
	recentShare = 0.25
	// noWindowBytes bounds the recent context when the window is unknown.
	noWindowBytes             = 64 << 10
	defaultCompactionRequests = 64
)

// SummaryPrompt is the final user message of a summarising request.
const SummaryPrompt = `Summarize this conversation for your own continuation. The summary replaces the older messages in your context, so everything you need to go on must be in it. Use exactly these sections:

## Goal
What the user wants overall.

## User constraints
Every explicit instruction, preference and constraint the user gave, quoted verbatim in quotation marks.

## Done
What has been completed and verified, with results.

## In progress
What was being worked on when this summary was written, and its state.

## Next action
The exact next action to take (the command to run or the edit to make), not a vague intent.

## Files touched
Each file created, edited or inspected, with what changed.

## Commands
Commands that worked, and commands that failed with how they failed.

## Unknown outcomes
Tool calls whose outcome is unknown (interrupted or cancelled); their effects must be inspected before any retry.

Write only the summary.`

// ResumptionPrompt is the message that continues work after auto-compaction.
const ResumptionPrompt = "# Resumption\n\nThe conversation was compacted automatically. Continue the pending task from the summary and the retained context above. Do not repeat completed actions. If the task is complete or needs input from the user, say so and stop."

// Compaction describes a committed compaction.
type Compaction struct {
	From, To string // predecessor and successor thread ids
	Summary  string
	Retained int // raw recent messages kept after the summary
	Trimmed  int // oldest messages left out of the summarising request to fit it
	Requests int // model requests made, retries included
}

// Compact summarises the latest thread with the model and starts a successor thread: the
// summary first, then bounded raw recent turns with their tool results. The predecessor
// keeps every message; metadata and live tools stay. It takes the writer gate. A manual
// compaction that succeeds turns auto-compaction back on.
func (r *runner) Compact(ctx context.Context) (*Compaction, error) {
	if err := r.rt.acquire(ctx, r.waiting); err != nil {
		return nil, err
	}
	defer r.rt.release()
	if err := r.rt.recover(ctx); err != nil {
		return nil, err
	}
	c, err := r.compact(ctx, r.agent(), false, true)
	if err != nil {
		return nil, err
	}
	r.rt.setAutoCompactOff(false)
	return c, nil
}

// compact compacts the latest thread: asked for (auto false) or on its own. guard refuses
// a thread compacted fewer than compactGuardSteps model steps ago: always for /compact,
// which would only summarise a summary, and between tool rounds when the same turn
// compacted it (a loop); not after an answer or an overflow, which compact once per
// submission.
func (r *runner) compact(ctx context.Context, cfg AgentConfig, auto, guard bool) (*Compaction, error) {
	// A copy: the thread is read while the model summarises, and only this runner (holding
	// the writer gate) changes it.
	th := r.rt.doc.copyOf(r.rt.doc.latest())
	if n := steps(th.Entries[min(th.Base, len(th.Entries)):]); guard && th.Reason == "compaction" && n < compactGuardSteps {
		return nil, tooSoon(th.ID, n, auto)
	}
	view := th.History()
	if len(view) == 0 {
		return nil, fmt.Errorf("compact thread %s: nothing to compact", th.ID)
	}
	summary, trimmed, requests, err := r.summarize(ctx, cfg, view)
	if err != nil {
		return nil, fmt.Errorf("compact thread %s: %w", th.ID, err)
	}
	facts := r.rt.observe(ctx, cfg)
	nt := &Thread{ID: r.rt.doc.nextThreadID(), Created: r.rt.now().UTC(), Reason: "compaction"}
	head := Entry{Facts: facts, Message: model.Message{Role: model.User, Parts: []model.Part{
		model.SystemPart("runtime", factsText(facts, th.Facts())),
		model.TextPart(successorIntro(th, summary)),
	}}}
	recent := recentEntries(th, cfg.ContextWindow)
	for {
		nt.Entries = append([]Entry{head}, recent...)
		if cfg.ContextWindow <= 0 || estimate(nt.Messages()) <= cfg.ContextWindow/2 {
			break
		}
		if len(recent) == 0 {
			return nil, &compactionLoopError{fmt.Sprintf("the summary of thread %s alone is %d tokens, over half the %d-token context window, "+
				"so its successor would start too full to work in; nothing was changed. Start a new session for the next part of the work, "+
				"or switch to a model with a larger context window", th.ID, estimate(nt.Messages()), cfg.ContextWindow)}
		}
		recent = dropTurn(recent)
	}
	// Its bookkeeping is set before the session shows it: a snapshot may read it at once.
	nt.scan()
	nt.open = false
	if err := r.rt.save(r.rt.doc.startThread(ctx, nt, 0)); err != nil {
		return nil, err
	}
	r.rt.emit(compacted{From: th.ID, To: nt.ID, Auto: auto})
	return &Compaction{From: th.ID, To: nt.ID, Summary: summary, Retained: len(recent), Trimmed: trimmed, Requests: requests}, nil
}

// successorIntro is the visible text of a successor's first message.
func successorIntro(pred *Thread, summary string) string {
	return fmt.Sprintf("# Compacted context\n\nThis thread continues thread %s of this session, which was compacted after %d messages. "+
		"The summary below and the recent messages after it replace the older messages. The predecessor keeps every original message and tool output: "+
		"read it with session_history, e.g. {\"action\":\"stats\",\"thread_id\":%q} and {\"action\":\"expand\",\"thread_id\":%q,\"index\":N}. "+
		"Recorded tool results are observations from that time: files and shells may have changed since.\n\n%s",
		pred.ID, len(pred.Entries), pred.ID, pred.ID, strings.TrimSpace(summary))
}

// steps counts the model responses among entries.
func steps(entries []Entry) int {
	n := 0
	for _, e := range entries {
		if e.Message.Role == model.Assistant {
			n++
		}
	}
	return n
}

// turnStart reports whether e starts a turn: a human input or a continuation.
func turnStart(e Entry) bool { return e.AcceptedAt != nil || e.Continuation }

// recentEntries returns the raw recent turns of th, with their tool results: at most
// recentTurns turns within recentShare of the window. Runtime parts and facts are left out,
// since the successor states the current ones.
func recentEntries(th *Thread, window int) []Entry {
	var starts []int
	for i, e := range th.Entries {
		if turnStart(e) && !e.Rejected {
			starts = append(starts, i)
		}
	}
	if len(starts) == 0 {
		return nil
	}
	if len(starts) > recentTurns {
		starts = starts[len(starts)-recentTurns:]
	}
	var out []Entry
	for _, e := range th.Entries[starts[0]:] {
		if !e.modelInput() {
			continue // never model input
		}
		var parts []model.Part
		for _, p := range e.Message.Parts {
			if p.Kind == model.KindSystem && p.System == "runtime" {
				continue
			}
			parts = append(parts, p)
		}
		if len(parts) == 0 {
			continue
		}
		out = append(out, Entry{Message: model.Message{Role: e.Message.Role, Parts: parts}, AcceptedAt: e.AcceptedAt, Continuation: e.Continuation})
	}
	limit := noWindowBytes / 4
	if window > 0 {
		limit = int(float64(window) * recentShare)
	}
	for len(out) > 0 && estimate(messagesOf(out)) > limit {
		next := dropTurn(out)
		if len(next) == 0 {
			// Only the latest turn is left, too large to keep whole (a long tool loop): keep
			// its input and its newest tool rounds, the execution frontier.
			return newestRounds(out, limit)
		}
		out = next
	}
	return out
}

// newestRounds returns the input of turn (one turn's entries) and as many of its newest
// rounds (an assistant message and the results after it) as fit in limit tokens, with a
// note on the input saying what was left out; nil when not even the input and the last
// round fit.
func newestRounds(turn []Entry, limit int) []Entry {
	for i := 2; i < len(turn); i++ {
		if turn[i].Message.Role != model.Assistant {
			continue
		}
		in := turn[0]
		in.Message.Parts = append(append([]model.Part(nil), in.Message.Parts...), model.TextPart(fmt.Sprintf(
			"[myco: %d messages of this turn after this input were left out here; the predecessor thread keeps them (session_history)]", i-1)))
		out := append([]Entry{in}, turn[i:]...)
		if estimate(messagesOf(out)) <= limit {
			return out
		}
	}
	return nil
}

// dropTurn removes the oldest turn of entries.
func dropTurn(entries []Entry) []Entry {
	for i := 1; i < len(entries); i++ {
		if turnStart(entries[i]) {
			return entries[i:]
		}
	}
	return nil
}

func messagesOf(entries []Entry) []model.Message {
	out := make([]model.Message, len(entries))
	for i, e := range entries {
		out[i] = e.Message
	}
	return out
}

// estimate approximates the tokens of msgs: four bytes of JSON per token.
func estimate(msgs []model.Message) int {
	b, _ := json.Marshal(msgs)
	return len(b) / 4
}

// summarize asks the model for a structured summary of view, with the agent's own system
// prompt and tools. It makes at most cfg.CompactionMaxRequests requests, retries included,
// and trims the oldest input first when the request does not fit.
func (r *runner) summarize(ctx context.Context, cfg AgentConfig, view []model.Message) (summary string, trimmed, requests int, err error) {
	limit := cfg.CompactionMaxRequests
	if limit <= 0 {
		limit = defaultCompactionRequests
	}
	if cfg.Options.Model == nil {
		return "", 0, 0, errors.New("no model to summarise with")
	}
	var specs []model.ToolSpec
	if r.rt.tools != nil {
		specs = r.rt.tools.Specs()
	}
	budget := 0
	if cfg.ContextWindow > 0 {
		out := cfg.Options.MaxOutputTokens
		if out <= 0 {
			out = 8192
		}
		budget = cfg.ContextWindow - out - estimate([]model.Message{{Role: model.User, Parts: []model.Part{model.TextPart(cfg.Options.System)}}})
	}
	msgs := view
	for budget > 0 && estimate(msgs) > budget && len(msgs) > 1 {
		msgs, trimmed = trimOldest(view, trimmed+max(1, len(msgs)/8))
	}
	var lastErr error
	for requests < limit {
		req := model.Request{
			Model: cfg.Options.APIModel, System: cfg.Options.System, Tools: specs,
			Messages:        merged(append(append([]model.Message(nil), msgs...), model.Message{Role: model.User, Parts: []model.Part{model.TextPart(SummaryPrompt)}})),
			MaxOutputTokens: cfg.Options.MaxOutputTokens, Thinking: cfg.Options.Thinking, Effort: cfg.Options.Effort,
		}
		requests++
		done, serr := r.stream(ctx, cfg.Options.Model, req, &requests, limit)
		if serr == nil && done.Stop != model.StopContext {
			text := strings.TrimSpace(done.Message.Text())
			if text == "" {
				return "", trimmed, requests, errors.New("the model returned an empty summary")
			}
			return text, trimmed, requests, nil
		}
		if ctx.Err() != nil {
			return "", trimmed, requests, context.Cause(ctx)
		}
		lastErr = serr
		if serr == nil {
			lastErr = errors.New("the summarising request exceeded the context window")
		}
		if !tooBig(serr, done) || len(msgs) <= 1 {
			return "", trimmed, requests, fmt.Errorf("summarise: %w", lastErr)
		}
		msgs, trimmed = trimOldest(view, trimmed+max(1, len(msgs)/4))
	}
	return "", trimmed, requests, fmt.Errorf("summarise: gave up after %d requests (compaction_max_requests): %w", requests, lastErr)
}

// stream runs one summarising request. Every retry the client announces counts against the
// request cap; the stream is abandoned when the cap is reached.
func (r *runner) stream(ctx context.Context, m agent.Model, req model.Request, requests *int, limit int) (model.Done, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for ch, err := range m.Stream(ctx, req) {
		if err != nil {
			return model.Done{}, err
		}
		switch c := ch.(type) {
		case model.Notice:
			if *requests >= limit {
				return model.Done{}, fmt.Errorf("compaction_max_requests (%d) reached: %w", limit, c.Err)
			}
			*requests++
			r.rt.emit(notice{Text: "compaction: " + c.Text})
		case model.Done:
			return c, nil
		}
	}
	return model.Done{}, model.ErrTruncatedStream
}

// tooBig reports whether a failed summarising request failed for its size.
func tooBig(err error, done model.Done) bool {
	if err == nil {
		return done.Stop == model.StopContext
	}
	var tl *model.RequestTooLargeError
	if errors.As(err, &tl) {
		return true
	}
	var pe *model.ProviderError
	if errors.As(err, &pe) && (pe.Status == 413 || pe.Status == 400) {
		msg := strings.ToLower(pe.Message)
		return pe.Status == 413 || strings.Contains(msg, "too long") || strings.Contains(msg, "context") || strings.Contains(msg, "too large")
	}
	return false
}

// trimOldest drops the first n messages of view (rounded up to a turn boundary when one is
// near) and repairs what remains, with a note saying what was left out.
func trimOldest(view []model.Message, n int) ([]model.Message, int) {
	n = min(n, len(view)-1)
	for i := n; i < len(view)-1; i++ {
		if view[i].Role == model.User && !startsWithResult(view[i]) {
			n = i
			break
		}
	}
	rest, _ := agent.RepairHistory(view[n:])
	note := model.Message{Role: model.User, Parts: []model.Part{model.TextPart(fmt.Sprintf(
		"[myco: the oldest %d messages of this thread were left out of this summarising request to fit it; session_history can read them]", n))}}
	if len(rest) > 0 && rest[0].Role == model.Assistant {
		return append([]model.Message{note}, rest...), n
	}
	return merged(append([]model.Message{note}, rest...)), n
}

func startsWithResult(m model.Message) bool {
	return len(m.Parts) > 0 && m.Parts[0].Kind == model.KindToolResult
}

// maybeAutoCompact compacts after a completed answer whose prompt reached the threshold,
// then continues once with a # Resumption message. It compacts also a thread compacted a
// few steps ago (the spec's one compact-and-continue cycle per submission; the step guard
// is for loops within a turn). A failure, or a prompt still above the threshold afterwards,
// turns auto-compaction off until a manual compaction succeeds.
func (r *runner) maybeAutoCompact(ctx context.Context, cfg AgentConfig, res agent.Result) (agent.Result, error) {
	if cfg.AutoCompactAt <= 0 || cfg.ContextWindow <= 0 || res.CapReached || res.Stop != model.StopEnd {
		return res, nil
	}
	threshold := cfg.AutoCompactAt * float64(cfg.ContextWindow)
	if float64(res.LastUsage.Input) < threshold {
		return res, nil
	}
	if r.rt.autoCompactOff() {
		return res, nil
	}
	if _, err := r.compact(ctx, cfg, true, false); err != nil {
		r.disableAuto(err.Error())
		if errors.Is(err, ErrSaveFailed) {
			return res, err
		}
		return res, nil
	}
	th := r.rt.doc.latest()
	n, err := r.append(ctx, th, Entry{Message: model.Message{Role: model.User, Parts: []model.Part{model.TextPart(ResumptionPrompt)}}, Continuation: true})
	if err != nil {
		return res, err
	}
	next, err := r.run(ctx, cfg, th, n-1, runAfter{compacted: true})
	next.Usage = next.Usage.Add(res.Usage)
	next.Steps += res.Steps
	next.TruncatedResumes += res.TruncatedResumes
	if err == nil && float64(next.LastUsage.Input) >= threshold {
		r.disableAuto(fmt.Sprintf("the prompt is still %d tokens after compacting", next.LastUsage.Input))
	}
	return next, err
}

// disableAuto turns auto-compaction off until a manual compaction succeeds, and says why.
func (r *runner) disableAuto(why string) {
	r.rt.setAutoCompactOff(true)
	r.rt.emit(notice{Text: "auto-compaction is off until a manual compaction succeeds: " + why})
}

// afterBatch is the agent's hook at the settled boundary after a tool batch's checkpoint.
// When the last response's prompt reached the auto-compaction threshold it compacts and
// moves the turn to the successor: the predecessor's turn ends as [TurnCompacted], a
// # Resumption continuation starts the turn in the successor (so a crash leaves it
// resumable and a rewind keeps the summary), and the same agent run goes on from the
// successor's history with the same live tools. A failed summary turns auto-compaction off
// and the run goes on uncompacted; the loop guard ([ErrCompactionLoop]: this submission
// compacted the thread fewer than compactGuardSteps model steps ago) also turns it off and
// stops the run, so the user decides what to drop.
func (tn *turn) afterBatch(ctx context.Context, _ []model.Message, last model.Usage) ([]model.Message, error) {
	r, cfg := tn.r, tn.cfg
	if cfg.AutoCompactAt <= 0 || cfg.ContextWindow <= 0 || float64(last.Input) < cfg.AutoCompactAt*float64(cfg.ContextWindow) || r.rt.autoCompactOff() {
		return nil, nil
	}
	pred := tn.th
	if _, err := r.compact(ctx, cfg, true, tn.compacted); err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrSaveFailed) {
			return nil, err
		}
		r.disableAuto(err.Error())
		if errors.Is(err, ErrCompactionLoop) {
			return nil, err
		}
		return nil, nil
	}
	if err := r.end(ctx, pred, TurnCompacted, nil); err != nil {
		return nil, err
	}
	nt := r.rt.doc.latest()
	n, err := r.append(ctx, nt, Entry{Message: model.Message{Role: model.User, Parts: []model.Part{model.TextPart(ResumptionPrompt)}}, Continuation: true})
	if err != nil {
		return nil, err
	}
	view := r.rt.doc.history(nt)
	tn.th, tn.start, tn.saved, tn.lastParts = nt, n-1, len(view), partsOfLast(view)
	tn.before, tn.compacted = model.Usage{}, true
	return view, nil
}
