package sessions

import (
	"strconv"
	"strings"
)

// The states of a session, what a person reads in the list, the sidebar, the tree of
// children, the tab's title and the API's state: what, if anything, it wants of them.
const (
	StateWorking  = "working"   // a turn or a compaction runs, here or in another process
	StateNeedsYou = "needs_you" // it waits for the person: see [StateOf]
	StateDone     = "done"      // its last turn answered (or it has had none)
	StateFailed   = "failed"    // its last turn failed in a way a Retry does not mend
)

// States are the states, in the order a list filters them.
var States = []string{StateWorking, StateNeedsYou, StateDone, StateFailed}

// StateInput is what a session's state is told from.
type StateInput struct {
	Busy      bool   // a job runs on it, here or elsewhere
	Stopped   bool   // a save failed: its work is stopped in this process
	Status    string // how its last turn stands: a [TurnState] status
	Code      string // and that end's code
	Queued    int    // messages waiting for the next turn
	Approvals int    // tool calls waiting for the person's approval (see [Status.Approvals])
}

// StateOf tells a session's state. It needs you when a tool call waits for approval, when
// its last turn was stopped, cut off by a crash, or failed in a way Retry can mend (or
// stopped at its budget, which a Retry with a higher one goes past), and when a queued
// message waits behind a stop. It failed when its work stopped on a save error, or when
// its last turn failed in a way that something has to be fixed first (a credential, the
// config, the message).
func StateOf(in StateInput) string {
	switch {
	case in.Approvals > 0: // its turn is busy, waiting for the person
		return StateNeedsYou
	case in.Busy:
		return StateWorking
	case in.Stopped:
		return StateFailed
	}
	switch in.Status {
	case TurnStopped, TurnCancelled, TurnInterrupted:
		return StateNeedsYou
	case TurnFailed, TurnRejected:
		if in.Code == "budget_reached" || Retryable(in.Code) {
			return StateNeedsYou
		}
		if in.Queued > 0 {
			return StateNeedsYou
		}
		return StateFailed
	}
	if in.Queued > 0 {
		return StateNeedsYou
	}
	return StateDone
}

// State tells the state of session s, doing st now.
func (m *Manager) State(s *Session, st Status) string {
	return StateOf(StateInput{Busy: st.Busy || st.Elsewhere != "", Stopped: st.Stopped != nil, Status: st.LastTurn.Status, Code: st.LastTurn.Code,
		Queued: len(s.Queue), Approvals: len(s.Approvals) + st.ApprovalsBelow})
}

// Why says, in a sentence for the person, why session s (doing st now) is in its state:
// the call that waits for approval, how its last turn ended and what it left, a message
// queued behind a stop; for a session that is done, the first line of its answer. A
// notification's body says it. It is "" for a session at work.
func (m *Manager) Why(s *Session, st Status) string {
	queued := ""
	switch len(s.Queue) {
	case 0:
	case 1:
		queued = " Your queued message waits."
	default:
		queued = " Your " + strconv.Itoa(len(s.Queue)) + " queued messages wait."
	}
	switch {
	case len(s.Approvals) > 0:
		a := s.Approvals[0]
		what := a.Tool
		switch {
		case a.Command != "":
			what += ": " + a.Command
		case len(a.Paths) > 0:
			what += ": " + strings.Join(a.Paths, ", ")
		}
		if n := len(s.Approvals); n > 1 {
			return strconv.Itoa(n) + " tool calls wait for your approval, the first " + oneLine(what)
		}
		return "A tool call waits for your approval: " + oneLine(what)
	case st.ApprovalsBelow > 0:
		return "A session it started waits for your approval."
	case st.Busy || st.Elsewhere != "":
		return ""
	case st.Stopped != nil:
		return "A save failed, so its work is stopped here."
	}
	t := st.LastTurn
	switch t.Status {
	case TurnStopped, TurnCancelled:
		return "Its turn was stopped." + queued
	case TurnInterrupted:
		return "Its turn was cut off: the process running it stopped." + queued
	case TurnFailed, TurnRejected:
		if t.Code == "budget_reached" {
			return "It stopped at its budget." + queued
		}
		return "Its turn failed: " + oneLine(t.Error) + queued
	}
	if queued != "" {
		return strings.TrimSpace(queued)
	}
	if a := previewText(t.Answer); a != "" {
		return a
	}
	return "Its turn is done."
}

// oneLine is s on one line, cut at previewMax bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > previewMax {
		s = strings.ToValidUTF8(s[:previewMax], "") + "…"
	}
	return s
}

// rowState tells the state of a listed session from what its log says.
func (m *Manager) rowState(s Summary, busy bool) string {
	status := s.LastStatus
	switch {
	case status == "":
		status = TurnNone
	case status == TurnCancelled:
		status = TurnStopped
	}
	if s.Open && !busy {
		if h, _ := m.o.Store.Holder(s.ID); h != "" {
			busy = true
		} else {
			status = TurnInterrupted
		}
	}
	code := s.LastCode
	if code == "" && status == TurnFailed {
		code = "failed"
	}
	return StateOf(StateInput{Busy: busy, Status: status, Code: code, Queued: s.Queued, Approvals: s.Approvals})
}

// rowCost is what a listed session's responses cost.
func (m *Manager) rowCost(s Summary) Cost {
	if len(s.SpentBy) == 0 {
		_, ok := m.prices(s.Model)
		return Cost{Known: ok}
	}
	c := Cost{Known: true}
	for k, u := range s.SpentBy { // a sum: the order changes at most the last bits
		if k == "" {
			k = s.Model
		}
		c = c.Add(m.usageCost(k, u))
	}
	return c
}
