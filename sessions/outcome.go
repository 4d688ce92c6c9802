package sessions

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"myco.dev/agent/model"
)

// How a session's latest turn stands ([TurnState.Status]): the recorded ends of turns
// ([TurnDone], [TurnFailed], [TurnRejected]; a cancelled turn is "stopped"), and these.
const (
	TurnNone        = "none"        // the session has had no turn yet
	TurnRunning     = "running"     // a turn runs now, in this process
	TurnInterrupted = "interrupted" // a turn started and never ended: the process running it stopped
	TurnStopped     = "stopped"     // the turn was stopped (recorded as [TurnCancelled])
)

// TurnCodes are the codes of [TurnState.Code] and of the error update of a job: what kind of
// end a turn that did not end with an answer had. A person reads [TurnState.Error].
var TurnCodes = []string{
	"stopped",           // the user stopped it
	"shutdown",          // the server stopped while it ran
	"interrupted",       // the process running it stopped (a crash): it can be resumed
	"request_too_large", // over max_request_bytes: rejected before it was sent, and rewound
	"context_overflow",  // the model's context window does not hold it: rejected, and rewound
	"rejected",          // the model endpoint refused it as invalid (400, 413, 422): rewound
	"model_error",       // the model endpoint failed (after its retries), or its stream broke off
	"save_failed",       // a save failed, so the session's work stopped
	"compaction_loop",   // auto-compaction would loop: the run stopped
	"unknown_model",     // the session's model is not in the catalog
	"failed",            // anything else
}

// TurnState is how a session's latest turn stands: its status, for a turn that did not end
// with an answer the kind of end (Code) and what a person is told (Error), and Answer, the
// turn's final answer (empty when it has none: an earlier turn's answer is never given).
type TurnState struct {
	Status string
	Code   string
	Error  string
	Answer string
	Thread string    // the thread the turn ended in
	At     time.Time // when it ended; zero for one that has not
}

// LastTurn returns how the session's latest turn stands, as its document records it: a
// turn left open is [TurnInterrupted] ([Manager.Snapshot] tells [TurnRunning] apart). The
// threads are read newest first, so that a rewound thread shows the turn it rejected and a
// compaction's successor, before its first turn, the turn that preceded it.
func (s *Session) LastTurn() TurnState {
	for i := len(s.Threads) - 1; i >= 0; i-- {
		t := s.Threads[i]
		if t.open {
			return TurnState{Status: TurnInterrupted, Code: "interrupted", Thread: t.ID, Answer: t.answer(len(t.Entries)),
				Error: "the process running this turn stopped before it ended; its running calls have unknown outcomes"}
		}
		for k := len(t.ends) - 1; k >= 0; k-- {
			e := t.ends[k]
			if e.Status == TurnCompacted {
				continue // the turn went on in the successor
			}
			st := TurnState{Status: e.Status, Code: e.Code, Error: e.Error, Thread: t.ID, At: e.At}
			switch e.Status {
			case TurnDone:
				st.Code, st.Error = "", ""
			case TurnCancelled:
				st.Status = TurnStopped
				if st.Code == "" {
					st.Code = "stopped"
				}
			case TurnRejected:
				if st.Code == "" {
					st.Code = "rejected"
				}
			default:
				if st.Code == "" {
					st.Code = "failed"
				}
			}
			st.Answer = t.answer(e.After)
			return st
		}
	}
	return TurnState{Status: TurnNone}
}

// answer is the final answer of the turn that ends before entry end: the text of its last
// assistant message, when that message asks for no tool (text written before tool calls is
// not an answer); "" when the turn has none.
func (t *Thread) answer(end int) string {
	for i := min(end, len(t.Entries)) - 1; i >= 0; i-- {
		e := t.Entries[i]
		if e.Partial != "" {
			continue // what streamed of an answer the turn ended without
		}
		if e.Rejected || turnStart(e) {
			return ""
		}
		if e.Message.Role == model.Assistant {
			if len(e.Message.ToolCalls()) > 0 {
				return ""
			}
			return e.Message.Text()
		}
	}
	return ""
}

// overflowAgainError is a turn that overflowed the context window again after the session
// was compacted to make it fit.
type overflowAgainError struct{ err error }

func (e *overflowAgainError) Error() string {
	return "it still does not fit after compacting the session: " + e.err.Error()
}
func (e *overflowAgainError) Unwrap() error { return e.err }

// describe returns the code of err (one of [TurnCodes]) and what a person is told of a
// turn or job that ended with it: what happened, in plain words, and what to do.
func describe(err error) (code, msg string) {
	var tl *model.RequestTooLargeError
	var pe *model.ProviderError
	var again *overflowAgainError
	var busy *BusyError
	var unknown *UnknownModelError
	var loop *compactionLoopError
	switch {
	case err == nil:
		return "", ""
	case errors.Is(err, ErrSaveFailed):
		return "save_failed", "a save failed, so the session's work stopped (" + cause(err) + "). Once the disk has room again (or what failed is fixed), send the message again."
	case errors.Is(err, ErrStopped):
		return "stopped", "stopped by the user"
	case errors.Is(err, ErrShutdown):
		return "shutdown", "the server stopped while the turn ran"
	case errors.As(err, &tl):
		return "request_too_large", "the request was not sent: " + tl.Error() + ". The turn was rewound to the last completed one"
	case errors.As(err, &again) && errors.As(err, &pe):
		return "context_overflow", "the message does not fit in the model's context window even after the session was compacted (" + providerSays(pe) +
			"). The turn was rewound; send a shorter message (fewer or smaller attachments), start a new session, or switch to a model with a larger context window"
	case errors.As(err, &pe) && pe.Overflow():
		return "context_overflow", "the model refused the request because the conversation does not fit in its context window (" + providerSays(pe) +
			"). The turn was rewound to the last completed one; compact the session (/compact, or the compact action) and send the message again, or start a new session"
	case errors.As(err, &pe) && pe.Rejected():
		return "rejected", "the model endpoint refused the request (" + providerSays(pe) +
			"). The turn was rewound to the last completed one, so the next message does not carry what it refused"
	case errors.As(err, &loop):
		return "compaction_loop", loop.Error()
	case errors.As(err, &busy):
		return "busy", busy.Error()
	case errors.As(err, &unknown):
		return "unknown_model", unknown.Error()
	case errors.As(err, &pe):
		return "model_error", providerSays(pe)
	case errors.Is(err, model.ErrTruncatedStream):
		return "model_error", "the model's stream broke off before the answer was complete (" + cause(err) + ")"
	}
	return "failed", cause(err)
}

// providerSays is what the model endpoint said, with its status.
func providerSays(pe *model.ProviderError) string { return pe.Error() }

// cause is err's message without the package prefixes a chain gathers.
func cause(err error) string {
	return strings.ReplaceAll(err.Error(), "sessions: ", "")
}

// UnknownModelError reports a catalog key the model catalog does not have: a session whose
// model was removed from the config. It matches [ErrUnknownModel].
type UnknownModelError struct {
	Session string   // the session whose model it is, if any
	Key     string   // the key
	Known   []string // the catalog's keys
}

// ErrUnknownModel is what an [UnknownModelError] matches.
var ErrUnknownModel = errors.New("sessions: unknown model")

func (e *UnknownModelError) Error() string {
	known := "none"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	if e.Session == "" {
		return fmt.Sprintf("no model %q in the catalog; the configured models are %s", e.Key, known)
	}
	return fmt.Sprintf("session %s uses model %q, which is no longer in the catalog; choose another with the select_model action (the model picker in the browser): the configured models are %s",
		e.Session, e.Key, known)
}

func (e *UnknownModelError) Unwrap() error { return ErrUnknownModel }
