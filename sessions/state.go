package sessions

import ()

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
