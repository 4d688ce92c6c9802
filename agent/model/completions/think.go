package completions

import "strings"

const (
	openThink  = "<think>"
	closeThink = "</think>"
)

// thinkState is where a [thinkSplitter] is in the content stream.
type thinkState int

const (
	thinkUndecided thinkState = iota // at the start: content so far might still open a <think>
	thinkInside                      // inside <think>…, looking for </think>
	thinkAfter                       // just after </think>: dropping the whitespace that follows
	thinkText                        // plain content from here on
)

// thinkSplitter routes a <think>…</think> block at the start of streamed content to
// thinking. Servers that don't split reasoning out (llama.cpp with --reasoning-format none,
// older builds while streaming) send it inline, and the tags can be cut anywhere across
// chunks, so a possible tag prefix is held back until the next chunk settles it.
type thinkSplitter struct {
	state   thinkState
	pending string // held back: the undecided start, or a possible partial </think>
}

// feed takes one content delta and returns what is now known to be thinking and text.
func (s *thinkSplitter) feed(delta string) (thinking, text string) {
	s.pending += delta
	for {
		switch s.state {
		case thinkUndecided:
			rest := strings.TrimLeft(s.pending, " \t\r\n")
			switch {
			case strings.HasPrefix(rest, openThink):
				s.pending, s.state = rest[len(openThink):], thinkInside
			case strings.HasPrefix(openThink, rest):
				return thinking, text // all whitespace, or a prefix of <think>: wait
			default:
				text, s.pending, s.state = s.pending, "", thinkText
				return thinking, text
			}
		case thinkInside:
			if i := strings.Index(s.pending, closeThink); i >= 0 {
				thinking += s.pending[:i]
				s.pending, s.state = s.pending[i+len(closeThink):], thinkAfter
				continue
			}
			keep := partialSuffix(s.pending, closeThink)
			thinking += s.pending[:len(s.pending)-keep]
			s.pending = s.pending[len(s.pending)-keep:]
			return thinking, text
		case thinkAfter:
			rest := strings.TrimLeft(s.pending, " \t\r\n")
			s.pending = ""
			if rest != "" {
				text, s.state = rest, thinkText
			}
			return thinking, text
		default:
			text, s.pending = text+s.pending, ""
			return thinking, text
		}
	}
}

// flush returns whatever is still held back when the content ends.
func (s *thinkSplitter) flush() (thinking, text string) {
	p := s.pending
	s.pending = ""
	switch s.state {
	case thinkInside:
		return p, ""
	case thinkAfter:
		return "", ""
	}
	return "", p
}

// partialSuffix returns the length of the longest proper prefix of tag that s ends with.
func partialSuffix(s, tag string) int {
	for n := min(len(tag)-1, len(s)); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}
