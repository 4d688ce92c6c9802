package sessions

import (
	"errors"
	"testing"
)

// TestStateOfPendingApproval: a session whose turn waits for the person's approval needs
// them, though its turn is busy; without one, a busy session is working.
func TestStateOfPendingApproval(t *testing.T) {
	for _, tt := range []struct {
		in   StateInput
		want string
	}{
		{StateInput{Busy: true, Approvals: 1}, StateNeedsYou},
		{StateInput{Busy: true}, StateWorking},
		{StateInput{Approvals: 2, Status: TurnDone}, StateNeedsYou},
		{StateInput{Status: TurnDone}, StateDone},
	} {
		if got := StateOf(tt.in); got != tt.want {
			t.Errorf("StateOf(%+v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestWhy (issue 32): what a notification says of why a session is in its state.
func TestWhy(t *testing.T) {
	bash := Approval{Tool: "bash", Command: "rm -rf build"}
	queued := []Queued{{}}
	for _, tt := range []struct {
		name string
		s    Session
		st   Status
		want string
	}{
		{"an approval", Session{Approvals: []Approval{bash}}, Status{Busy: true}, "A tool call waits for your approval: bash: rm -rf build"},
		{"two", Session{Approvals: []Approval{{Tool: "str_replace_based_edit_tool", Paths: []string{"a.go", "b.go"}}, bash}}, Status{Busy: true},
			"2 tool calls wait for your approval, the first str_replace_based_edit_tool: a.go, b.go"},
		{"a child's approval", Session{}, Status{Busy: true, ApprovalsBelow: 1}, "A session it started waits for your approval."},
		{"at work", Session{}, Status{Busy: true}, ""},
		{"a failed save", Session{}, Status{Stopped: errors.New("disk full")}, "A save failed, so its work is stopped here."},
		{"stopped, a message queued", Session{Queue: queued}, Status{LastTurn: TurnState{Status: TurnStopped}}, "Its turn was stopped. Your queued message waits."},
		{"cut off", Session{}, Status{LastTurn: TurnState{Status: TurnInterrupted}}, "Its turn was cut off: the process running it stopped."},
		{"failed", Session{}, Status{LastTurn: TurnState{Status: TurnFailed, Code: "rate_limited", Error: "The gateway answered 429.\nWait a minute."}},
			"Its turn failed: The gateway answered 429. Wait a minute."},
		{"its budget", Session{}, Status{LastTurn: TurnState{Status: TurnFailed, Code: "budget_reached", Error: "spent"}}, "It stopped at its budget."},
		{"done", Session{}, Status{LastTurn: TurnState{Status: TurnDone, Answer: "## The fix\n\nIt was the lexer."}}, "The fix"},
		{"done, no answer", Session{}, Status{LastTurn: TurnState{Status: TurnDone}}, "Its turn is done."},
	} {
		if got := (&Manager{}).Why(&tt.s, tt.st); got != tt.want {
			t.Errorf("%s: Why = %q, want %q", tt.name, got, tt.want)
		}
	}
}
