package cli

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"myco.dev/internal/termtext"
	"myco.dev/sessions"
)

// A tool call's output shows on stderr while the call runs, from the progress updates of
// the session service, and the rest of it when the call ends, each time as at most
// [outputLines] lines, dimmed and indented under the call's header, every line cut to the
// terminal's width. A progress update carries the newest 2 KiB of the output, at most
// every two seconds, as the browser's card shows it; the lines that are new since the last
// one are printed. Calls that run at once print their lines as they come, interleaved.

// outputLines bounds the lines of a call's output printed at once: what a progress update
// brought, or the rest when the call ended. The lines before them are counted as left out.
const outputLines = 10

// maxPartial bounds the unfinished last line held until its newline comes.
const maxPartial = 1 << 10

// outputPrefix starts every line of a call's output.
const outputPrefix = "  │ "

// callOutput is what was shown of a running call's output.
type callOutput struct {
	seen    string // the newest progress update's text: the end of the output so far
	partial string // the end of seen after its last line break, not shown yet
}

// progress prints the lines that a running call's progress update u brought.
func (p *printer) progress(u sessions.Update) {
	p.mu.Lock()
	c := p.calls[u.CallID]
	if c == nil {
		if p.calls == nil {
			p.calls = map[string]*callOutput{}
		}
		c = &callOutput{}
		p.calls[u.CallID] = c
	}
	fresh, gap := newOutput(c.seen, u.Text)
	c.seen = u.Text
	text := c.partial + fresh
	if gap {
		text = fresh // the output between the two updates is not known: it is said so
	}
	i := strings.LastIndexByte(text, '\n')
	c.partial = boundPartial(text[i+1:])
	p.mu.Unlock()
	if i >= 0 {
		p.outputLines(text[:i], gap)
	}
}

// finished prints the output of a call that ended, as far as it was not shown while it
// ran, and forgets the call. A bash call's output is always shown (its last lines), and
// so is a stopped call's, which is what it printed until the stop; another tool's only when
// it reported output while it ran.
func (p *printer) finished(u sessions.Update, o sessions.Outcome) {
	p.mu.Lock()
	c := p.calls[u.CallID]
	delete(p.calls, u.CallID)
	p.mu.Unlock()
	if c == nil && u.Tool != "bash" && o.Words != "stopped" {
		return
	}
	out := o.Output
	if u.Tool == "bash" {
		out = strings.TrimSuffix(strings.TrimRight(out, "\n"), sessions.BashEndLine(out)) // its own line says how it ended
	}
	// The rest after what the last update showed; when the result does not hold that
	// update (its output was cut), the result's end.
	if c != nil {
		if i := strings.LastIndex(out, c.seen); i >= 0 {
			out = c.partial + out[i+len(c.seen):]
		}
	}
	out = strings.TrimRight(out, "\n")
	if strings.TrimSpace(out) != "" {
		p.outputLines(out, false)
	}
}

// newOutput returns what is new in cur, a progress update's text, after prev, the one
// before: the output so far ends with cur, and ended with prev. Under the update's 2 KiB
// the output only grew, so cur starts with prev; past it the window slid, and cur starts
// with an end of prev (the longest is taken: output that repeats itself may show fewer new
// lines than it had). gap reports that cur does not continue prev at all.
func newOutput(prev, cur string) (fresh string, gap bool) {
	if strings.HasPrefix(cur, prev) {
		return cur[len(prev):], false
	}
	for d := 1; d < len(prev); d++ {
		if strings.HasPrefix(cur, prev[d:]) {
			return cur[len(prev)-d:], false
		}
	}
	return cur, true
}

// boundPartial keeps an unfinished line to what a terminal would show of it, its text
// after the last carriage return (a progress bar redraws its line), and to its last
// [maxPartial] bytes.
func boundPartial(s string) string {
	if i := strings.LastIndexByte(s, '\r'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	if len(s) > maxPartial {
		s = s[len(s)-maxPartial:]
		for len(s) > 0 && !utf8.RuneStart(s[0]) {
			s = s[1:]
		}
	}
	return s
}

// outputLines prints text's lines (the last [outputLines] of them, after a line that says
// how many were left out), dimmed and indented, each cut to the terminal's width. gap
// says that text follows a stretch of output that is not known.
func (p *printer) outputLines(text string, gap bool) {
	lines := strings.Split(text, "\n")
	left := max(0, len(lines)-outputLines)
	lines = lines[left:]
	switch {
	case gap:
		p.outputLine("… earlier output left out")
	case left == 1:
		p.outputLine("… 1 line left out")
	case left > 1:
		p.outputLine(fmt.Sprintf("… %d lines left out", left))
	}
	for _, l := range lines {
		p.outputLine(shownLine(l))
	}
}

// shownLine is a line of output as a terminal would show it, made safe: its text after
// its last carriage return (a line break's \r dropped), tabs expanded.
func shownLine(l string) string {
	l = strings.TrimSuffix(l, "\r")
	if i := strings.LastIndexByte(l, '\r'); i >= 0 {
		l = l[i+1:]
	}
	return termtext.ExpandTabs(termtext.Safe(l))
}

// outputLine prints one line of a call's output, already safe, cut to the terminal.
func (p *printer) outputLine(l string) {
	line := outputPrefix + l
	line = termtext.Cut(line, p.columns()-1)
	p.styled(styleDim, "%s", line)
}
