package sessions

import "testing"

func TestCompactedSummary(t *testing.T) {
	intro := successorIntro(&Thread{ID: "t1", Entries: make([]Entry, 12)}, "## Goal\n\nShip it.")
	if got := CompactedSummary(intro); got != "## Goal\n\nShip it." {
		t.Errorf("CompactedSummary(intro) = %q, want the summary alone", got)
	}
	if got := CompactedSummary("plain text"); got != "plain text" {
		t.Errorf("CompactedSummary(plain) = %q", got)
	}
}
