package sessions

import "testing"

// TestStreamed: the text streamed up to a cursor is the deltas published up to it, and it
// starts over where a page's live region does.
func TestStreamed(t *testing.T) {
	var s streamed
	s.note(Update{Seq: 3, Type: UpdateTextDelta, Text: "Hel"})
	s.note(Update{Seq: 4, Type: UpdateThinkingDelta, Text: "hmm"})
	s.note(Update{Seq: 5, Type: UpdateNotice, Text: "retrying"})
	s.note(Update{Seq: 7, Type: UpdateTextDelta, Text: "lo"})
	for _, tt := range []struct {
		seq            uint64
		text, thinking string
	}{{2, "", ""}, {3, "Hel", ""}, {4, "Hel", "hmm"}, {6, "Hel", "hmm"}, {7, "Hello", "hmm"}, {99, "Hello", "hmm"}} {
		if text, thinking := s.upTo(tt.seq); text != tt.text || thinking != tt.thinking {
			t.Errorf("upTo(%d) = %q, %q; want %q, %q", tt.seq, text, thinking, tt.text, tt.thinking)
		}
	}
	s.note(Update{Seq: 8, Type: UpdateCheckpoint})
	if text, _ := s.upTo(99); text != "" {
		t.Errorf("after a checkpoint: %q, want nothing", text)
	}
}
