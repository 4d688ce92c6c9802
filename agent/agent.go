package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"

	"myco.dev/agent/model"
)

// Model is all the loop needs from a provider client; *model.Client satisfies it. Stream
// must stop promptly when ctx is done.
type Model interface {
	Stream(ctx context.Context, req model.Request) iter.Seq2[model.Chunk, error]
}

// Tools is the tool executor; the host harness satisfies it. It must be safe for concurrent
// use: the calls of one response run at the same time.
type Tools interface {
	Specs() []model.ToolSpec
	// Call runs one tool call. It never panics: failures are IsError results. It must return
	// promptly once ctx is done, because the run waits for every call it started.
	Call(ctx context.Context, call model.ToolCall) model.ToolResult
}

// Options configures an [Agent].
type Options struct {
	Model Model
	Tools Tools // nil means no tools

	APIModel        string // wire model id
	MaxOutputTokens int
	Thinking        string
	Effort          string
	CacheKey        string
	System          string // the system prompt; see [SystemPrompt]

	// MaxTruncatedResumes caps how many consecutive responses cut off at the output token
	// limit one run resumes through. 0 disables resuming.
	MaxTruncatedResumes int

	// Sink receives every event. It is called synchronously from the run goroutine and from
	// tool goroutines, never twice at once, so it must not block for long. nil drops events.
	Sink func(Event)

	// Checkpoint is called with the whole history after each model step and after each tool
	// batch. An error stops the run at once, before any further model or tool work (fail
	// closed), and Run returns it wrapped. nil means no checkpoints.
	Checkpoint func(ctx context.Context, history []model.Message) error

	// BeforeStep runs before every model request and returns the history to use, for example
	// with hidden system parts appended to the last message. What it returns is kept in the
	// history. nil means none.
	BeforeStep func(ctx context.Context, history []model.Message) []model.Message

	// AfterBatch runs at the settled boundary after each tool batch's checkpoint, with the
	// history and the usage of the last response (its Input is the prompt size). A non-nil
	// history it returns replaces the run's history, for example a compacted one; the run
	// goes on from it. An error stops the run. nil means none.
	AfterBatch func(ctx context.Context, history []model.Message, last model.Usage) ([]model.Message, error)

	// AroundBatch, when set, runs each tool batch (the calls of one response, after the
	// checkpoint of that response): it must call run once, with ctx or a context derived
	// from it, and return what run returned. It may work before and after the calls, which
	// the checkpoint after the batch then follows (the session captures its files around
	// a batch, and saves what it captured with the batch's results). nil runs the batch
	// as it is.
	AroundBatch func(ctx context.Context, calls []model.ToolCall, run func(context.Context) []model.ToolResult) []model.ToolResult

	// ContextWindow, when set, lets the agent see its own context use: each request after
	// the first carries, on a copy of its last message, a hidden note of the prompt tokens
	// the previous response reported and their share of the window. The note is not kept
	// in the history, so the stored conversation and the cached prefix stay unchanged.
	ContextWindow int

	Log *slog.Logger // nil discards
}

// ContextNote returns the hidden note that tells the agent its context use.
func ContextNote(promptTokens, window int) string {
	pct := float64(promptTokens) * 100 / float64(window)
	return fmt.Sprintf("[myco: context use] %s of %s tokens (%.1f%% of the window).", thousands(promptTokens), thousands(window), pct)
}

// maxPauses bounds how many pause_turn responses in a row are resent.
const maxPauses = 5

// ContinuePrompt is the user message that asks the model to continue a response that was
// cut off mid-sentence at the output token limit. The cut-off message itself stays in the
// history as it is: resending it as a prefill is a shape current models reject.
const ContinuePrompt = "Your previous response was cut off at the output token limit. Continue exactly where you stopped, without repeating anything you already wrote."

// Agent is the run loop of one live agent. It keeps no history of its own: [Agent.Run] takes
// the history and returns the updated one. Its methods are safe for concurrent use, but the
// runs of one conversation must not overlap.
type Agent struct {
	opts Options
	log  *slog.Logger

	sinkMu sync.Mutex // serializes calls of opts.Sink
}

// New returns an agent configured by o.
func New(o Options) *Agent {
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	return &Agent{opts: o, log: log}
}

// Result summarizes a run.
type Result struct {
	Stop model.StopReason // why the last response stopped
	// Answer is the text of the last assistant message, preceded by the text of the cut-off
	// messages it continues when the run resumed mid-sentence.
	Answer string
	Usage  model.Usage // summed over every response of the run
	// LastUsage is the usage of the last response; its Input is the current prompt size.
	LastUsage        model.Usage
	Steps            int // model responses received
	TruncatedResumes int // truncation resumes over the whole run
	// CapReached reports that the run ended on a response cut off at the output token limit
	// because MaxTruncatedResumes consecutive resumes were used up (or resuming is disabled).
	CapReached bool
}

// Run continues the conversation in history, whose last message is normally the user's new
// input, until the model gives a final answer, the truncation cap is hit, an error happens or
// ctx is done. It returns the full updated history and a summary of the run.
//
// The returned history is always consistent: every tool call is answered by a result in the
// next message, even after an error or cancellation. When ctx is done, Run stops streaming at
// once and drops the partly streamed response (half a message is never appended); tool calls
// still running get Unknown results, calls of the batch that had finished keep theirs, and
// the error satisfies errors.Is with both ctx.Err() and context.Cause(ctx). The input slice
// is not modified.
func (a *Agent) Run(ctx context.Context, history []model.Message) ([]model.Message, Result, error) {
	r := &run{a: a, h: append([]model.Message(nil), history...)}
	err := r.loop(ctx)
	return r.h, r.res, err
}

// run is the state of one Run.
type run struct {
	a       *Agent
	h       []model.Message
	res     Result
	resumes int    // consecutive truncation resumes
	pauses  int    // consecutive pause_turn resends
	carry   string // answer text of the cut-off responses the next one continues
	fresh   bool   // AfterBatch replaced the history: the last usage no longer describes it
}

func (r *run) loop(ctx context.Context) error {
	a := r.a
	for {
		if ctx.Err() != nil {
			return canceled(ctx)
		}
		req, amended := r.request(ctx)
		if amended {
			// BeforeStep's notes must be durable before the model sees them.
			if err := r.checkpoint(ctx); err != nil {
				return err
			}
		}
		done, err := a.step(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return canceled(ctx)
			}
			return fmt.Errorf("model step %d: %w", r.res.Steps+1, err)
		}
		msg := r.uniqueCalls(done.Message)
		msg.Role = model.Assistant
		r.res.Steps++
		r.res.Stop = done.Stop
		r.res.Usage = r.res.Usage.Add(done.Usage)
		r.res.LastUsage = done.Usage
		r.res.Answer = r.carry + msg.Text()
		r.carry = ""
		if len(msg.Parts) > 0 {
			r.h = append(r.h, msg)
		}
		a.emit(StepDone{Stop: done.Stop, Usage: done.Usage})
		calls := msg.ToolCalls()

		if done.Stop == model.StopMaxTokens {
			r.pauses = 0
			if r.resumes >= a.opts.MaxTruncatedResumes {
				r.res.CapReached = true
				if len(calls) > 0 {
					r.h = append(r.h, resultMessage(notRun(calls, a.opts.MaxTruncatedResumes)))
				}
				return r.checkpoint(ctx)
			}
			r.resumes++
			r.res.TruncatedResumes++
			if len(calls) > 0 {
				a.emit(Resumed{Reason: "the response was cut off at the output token limit; running its tool calls and continuing", N: r.resumes, Max: a.opts.MaxTruncatedResumes})
				if err := r.checkpoint(ctx); err != nil {
					return err
				}
				if err := r.batch(ctx, calls); err != nil {
					return err
				}
				continue
			}
			a.emit(Resumed{Reason: "the response was cut off at the output token limit; asking the model to continue", N: r.resumes, Max: a.opts.MaxTruncatedResumes})
			if len(msg.Parts) > 0 {
				r.h = append(r.h, model.Message{Role: model.User, Parts: []model.Part{model.TextPart(ContinuePrompt)}})
			}
			r.carry = r.res.Answer
			if err := r.checkpoint(ctx); err != nil {
				return err
			}
			continue
		}

		r.resumes = 0
		if err := r.checkpoint(ctx); err != nil {
			return err
		}
		if len(calls) > 0 {
			r.pauses = 0
			if err := r.batch(ctx, calls); err != nil {
				return err
			}
			continue
		}
		if done.Stop == model.StopPause && r.pauses < maxPauses {
			r.pauses++
			continue
		}
		return nil
	}
}

// request builds the next model request, first letting BeforeStep amend the history and
// then repairing it. amended reports that BeforeStep changed the history.
func (r *run) request(ctx context.Context) (req model.Request, amended bool) {
	a := r.a
	if a.opts.BeforeStep != nil {
		before, parts := len(r.h), lastParts(r.h)
		r.h = a.opts.BeforeStep(ctx, r.h)
		amended = len(r.h) != before || lastParts(r.h) != parts
	}
	if fixed, changed := RepairHistory(r.h); changed {
		a.log.Warn("repaired history before model request", "messages_before", len(r.h), "messages_after", len(fixed))
		r.h = fixed
	}
	var specs []model.ToolSpec
	if a.opts.Tools != nil {
		specs = a.opts.Tools.Specs()
	}
	msgs := r.h[:len(r.h):len(r.h)] // a later append must not write into what the model holds
	fresh := r.fresh
	r.fresh = false
	if w := a.opts.ContextWindow; w > 0 && r.res.Steps > 0 && !fresh && len(msgs) > 0 {
		last := msgs[len(msgs)-1]
		last.Parts = append(append([]model.Part(nil), last.Parts...), model.SystemPart(model.SystemContext, ContextNote(r.res.LastUsage.Input, w)))
		msgs = append(msgs[:len(msgs)-1:len(msgs)-1], last)
	}
	return model.Request{
		Model:           a.opts.APIModel,
		System:          a.opts.System,
		Messages:        msgs,
		Tools:           specs,
		MaxOutputTokens: a.opts.MaxOutputTokens,
		Thinking:        a.opts.Thinking,
		Effort:          a.opts.Effort,
		CacheKey:        a.opts.CacheKey,
	}, amended
}

// uniqueCalls gives each tool call of a response whose id is already used in the history or
// earlier in the response, or is not a valid id, a fresh one (see [callIDs.claim]), before
// the response joins the history and its calls run. A provider refuses every later request
// of a history with duplicate ids, so one model mistake would otherwise brick the session.
func (r *run) uniqueCalls(msg model.Message) model.Message {
	if len(msg.ToolCalls()) == 0 {
		return msg
	}
	msg, renames := usedCallIDs(r.h).claimCalls(msg)
	for _, rn := range renames {
		if rn.from != rn.to {
			r.a.log.Warn("model sent a tool call id that is taken or invalid; the call gets a fresh one", "id", clipID(rn.from), "new_id", rn.to)
		}
	}
	return msg
}

// lastParts returns how many parts the last message of h has.
func lastParts(h []model.Message) int {
	if len(h) == 0 {
		return 0
	}
	return len(h[len(h)-1].Parts)
}

// step streams one response, forwarding its deltas and notices, and returns its Done.
func (a *Agent) step(ctx context.Context, req model.Request) (model.Done, error) {
	for ch, err := range a.opts.Model.Stream(ctx, req) {
		if ctx.Err() != nil {
			return model.Done{}, canceled(ctx)
		}
		if err != nil {
			return model.Done{}, err
		}
		switch c := ch.(type) {
		case model.TextDelta:
			a.emit(TextDelta{Text: c.Text})
		case model.ThinkingDelta:
			a.emit(ThinkingDelta{Text: c.Text})
		case model.Notice:
			a.emit(Notice{Text: c.Text})
		case model.Done:
			return c, nil
		}
	}
	if ctx.Err() != nil {
		return model.Done{}, canceled(ctx)
	}
	return model.Done{}, model.ErrTruncatedStream
}

// batch runs calls, appends their results and checkpoints.
func (r *run) batch(ctx context.Context, calls []model.ToolCall) error {
	var results []model.ToolResult
	if around := r.a.opts.AroundBatch; around != nil {
		results = around(ctx, calls, func(ctx context.Context) []model.ToolResult { return r.a.runTools(ctx, calls) })
	} else {
		results = r.a.runTools(ctx, calls)
	}
	r.h = append(r.h, resultMessage(results))
	if ctx.Err() != nil {
		// The results record side effects, so save them even though the run is over.
		if err := r.checkpoint(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("%w (%w)", canceled(ctx), err)
		}
		return canceled(ctx)
	}
	if err := r.checkpoint(ctx); err != nil {
		return err
	}
	return r.afterBatch(ctx)
}

func (r *run) checkpoint(ctx context.Context) error {
	if r.a.opts.Checkpoint == nil {
		return nil
	}
	if err := r.a.opts.Checkpoint(ctx, r.h); err != nil {
		return fmt.Errorf("checkpoint after step %d: %w", r.res.Steps, err)
	}
	return nil
}

// canceled returns the error of a run stopped by ctx. It matches both ctx.Err()
// (context.Canceled or DeadlineExceeded) and the cause, such as a "stopped by user" error.
func canceled(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || errors.Is(cause, err) {
		return fmt.Errorf("run interrupted: %w", err)
	}
	return fmt.Errorf("run interrupted: %w: %w", err, cause)
}
