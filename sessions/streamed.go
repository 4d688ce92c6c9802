package sessions

import (
	"sort"
	"strings"
)

// streamed is the text of the response streaming now, as its deltas were published: a page
// opened, or a stream reconnected, in the middle of an answer shows what came before its
// cursor at once, then the deltas after it. It ends where a page's live region ends: when
// the response is saved (a checkpoint), at the next input, and when the job ends.
type streamed struct {
	text, thinking strings.Builder
	marks          []streamMark // after each published delta, in sequence order
}

type streamMark struct {
	seq            uint64
	text, thinking int // bytes of each after the delta
}

// note follows published update u.
func (s *streamed) note(u Update) {
	switch u.Type {
	case UpdateTextDelta:
		s.text.WriteString(u.Text)
	case UpdateThinkingDelta:
		s.thinking.WriteString(u.Text)
	case UpdateCheckpoint, UpdateAccepted, UpdateDone, UpdateError, UpdateCancelled, UpdateReset, UpdateCompacted, UpdateRewound:
		if s.text.Len() > 0 || s.thinking.Len() > 0 || s.marks != nil {
			*s = streamed{}
		}
		return
	default:
		return
	}
	s.marks = append(s.marks, streamMark{seq: u.Seq, text: s.text.Len(), thinking: s.thinking.Len()})
}

// upTo returns the text and thinking published up to and including sequence number seq.
func (s *streamed) upTo(seq uint64) (text, thinking string) {
	i := sort.Search(len(s.marks), func(i int) bool { return s.marks[i].seq > seq })
	if i == 0 {
		return "", ""
	}
	m := s.marks[i-1]
	return s.text.String()[:m.text], s.thinking.String()[:m.thinking]
}

// Streaming returns the text and the thinking of session id's response that streamed up to
// event cursor (an id from [Manager.EventID] or a subscription's): what a page whose stream
// starts after cursor has not got from it. Both are empty when nothing streams, the session
// is not open, or the cursor is not this process's.
func (m *Manager) Streaming(id, cursor string) (text, thinking string) {
	seq, ok := m.bus.cursor(cursor)
	if !ok {
		return "", ""
	}
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	if l == nil {
		return "", ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.streamed.upTo(seq)
}
