package sessions

import "testing"

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
