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

// TurnState is how a session's latest turn stands: its status, for a turn that did not end
// with an answer the kind of end (Code, one of [Kinds]), what a person is told (Error) and
// the technical detail (Detail), and Answer, the turn's final answer (empty when it has
// none: an earlier turn's answer is never given).
type TurnState struct {
	Status string
	Code   string
	Error  string
	Detail string
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
			st := TurnState{Status: e.Status, Code: e.Code, Error: e.Error, Detail: e.Detail, Thread: t.ID, At: e.At}
			switch e.Status {
			case TurnDone:
				st.Code, st.Error, st.Detail = "", "", ""
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
