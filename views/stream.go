package views

import (
	"strings"
)

// Markdown while it streams. An answer arrives in deltas, a few dozen bytes every 40 ms;
// rendering the whole text again for each would cost the square of its length and send ever
// larger fragments. A [LiveMarkdown] instead splits the text where no later text can change
// what came before, renders each settled part once, and shows the still-open end as text
// until it settles too. The page appends the settled parts and replaces only the open end.
//
// A settle point is the start of a line that follows a blank line outside a fenced code
// block, when that line begins at its first column with something that starts a new block:
// not a list item (a blank line between two items makes them one loose list), not an
// indented line (a list item's continuation, indented code); and a fence that opens in the
// first column, which ends whatever block came before it. Everything before it is whole
// Markdown blocks that render alone exactly as they render within the whole text, except
// where link reference definitions or footnotes tie distant parts together; then the whole
// text is rendered again at the end (see [LiveMarkdown.Whole]).

// LiveMarkdown renders one streaming answer. The zero value is not usable; use
// [NewLiveMarkdown]. It is not safe for concurrent use.
type LiveMarkdown struct {
	o    MarkdownOptions
	html strings.Builder // the settled parts' HTML, in order
	text strings.Builder // every byte added
	n    int             // bytes of text settled
	safe bool            // rendering the parts equals rendering the whole, so far

	// shown is the open tail as the page shows it (see [LiveMarkdown.Delta]).
	shown LiveOpen

	// The scan of the open tail, text[n:], resumed where it stopped.
	scanned int    // bytes of the tail whose lines are scanned (whole lines only)
	fence   string // the open fence's marker ("```", "~~~~"), "" outside a fence
	blank   bool   // the last scanned line was blank (outside a fence)
}

// NewLiveMarkdown returns a renderer for an answer whose links map as o says.
func NewLiveMarkdown(o MarkdownOptions) *LiveMarkdown {
	return &LiveMarkdown{o: o, safe: true}
}

// Add appends delta to the answer. When some of the open tail settles, settled is its
// HTML (to append after the parts before it) and tail the text still open, which replaces
// the tail shown; otherwise settled is empty and the tail shown grows by delta.
func (l *LiveMarkdown) Add(delta string) (settled MarkdownHTML, tail string) {
	l.text.WriteString(delta)
	all := l.text.String()
	cut := l.scan(all[l.n:])
	if cut == 0 {
		return MarkdownHTML{}, ""
	}
	part := all[l.n : l.n+cut]
	l.n += cut
	l.scanned -= cut
	if len(part) > MaxMarkdownBytes || tooCostly(part) || strings.Contains(part, "]:") || strings.Contains(part, "[^") {
		l.safe = false // a reference definition or footnote, or a part shown plain
	}
	h := Markdown(part, l.o)
	l.html.WriteString(h.html)
	return h, all[l.n:]
}

// Tail returns the text not settled yet.
func (l *LiveMarkdown) Tail() string { return l.text.String()[l.n:] }

// Settled returns the HTML of every part settled so far.
func (l *LiveMarkdown) Settled() MarkdownHTML { return MarkdownHTML{l.html.String()} }

// Text returns the whole answer so far.
func (l *LiveMarkdown) Text() string { return l.text.String() }

// Whole returns the HTML of the whole answer, as [Markdown] renders it, and the cost of
// that: when the parts settled so far render alone as they do together, it is their HTML
// and the tail's, and the text is not rendered again.
func (l *LiveMarkdown) Whole() MarkdownHTML {
	all := l.text.String()
	if !l.safe || len(all) > MaxMarkdownBytes || tooCostly(all) {
		return Markdown(all, l.o)
	}
	tail := all[l.n:]
	if strings.Contains(tail, "]:") || strings.Contains(tail, "[^") {
		return Markdown(all, l.o)
	}
	if tail == "" {
		return MarkdownHTML{l.html.String()}
	}
	return MarkdownHTML{l.html.String() + Markdown(tail, l.o).html}
}

// scan reads the whole lines of tail not scanned yet and returns the length of its longest
// prefix that ends at a settle point, 0 for none.
func (l *LiveMarkdown) scan(tail string) int {
	cut := 0
	for {
		rest := tail[l.scanned:]
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			// An unfinished line can still settle what is before it, once its first
			// character says it starts a new block.
			if l.fence == "" && l.blank && rest != "" && startsBlock(rest) {
				cut = l.scanned
			}
			return cut
		}
		line := rest[:nl]
		if l.fence == "" && l.blank && !isBlank(line) && startsBlock(line) {
			cut = l.scanned
		}
		if l.fence == "" && !l.blank && l.scanned > 0 && line != "" && (line[0] == '`' || line[0] == '~') && opensFence(line) != "" {
			// A fence in the first column ends the paragraph, list or quote before it,
			// which settle: the open fence is then the tail's start, which the page shows as
			// the code block it is (see [LiveMarkdown.Open]).
			cut = l.scanned
		}
		l.scanned += nl + 1
		switch {
		case l.fence != "":
			if closesFence(line, l.fence) {
				l.fence = ""
			}
			l.blank = false
		case isBlank(line):
			l.blank = true
		default:
			l.fence = opensFence(line)
			l.blank = false
		}
	}
}

func isBlank(line string) bool { return strings.TrimLeft(line, " \t\r") == "" }

// startsBlock reports whether line, which follows a blank line, starts a new top-level
// block on its own: it begins in its first column and is not a list item.
func startsBlock(line string) bool {
	c := line[0]
	switch {
	case c == ' ' || c == '\t' || c == '\r':
		return false
	case c == '-' || c == '*' || c == '+':
		// A list item needs a space after its marker ("- a"); "---" and "**a**" are not.
		return len(line) > 1 && line[1] != ' ' && line[1] != '\t'
	case c >= '0' && c <= '9':
		i := 0
		for i < len(line) && i < 10 && line[i] >= '0' && line[i] <= '9' {
			i++
		}
		if i == len(line) {
			return false // "12" may still become "12. item"
		}
		return !((line[i] == '.' || line[i] == ')') && (i+1 == len(line) || line[i+1] == ' ' || line[i+1] == '\t'))
	}
	return true
}

// opensFence returns the marker of the fenced code block line opens, or "".
func opensFence(line string) string {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return ""
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 || t[0] == '`' && strings.Contains(t[n:], "`") {
		return "" // an info string may not hold a backtick
	}
	return t[:n]
}

// closesFence reports whether line closes the fence opened by marker.
func closesFence(line, marker string) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || !strings.HasPrefix(t, marker) {
		return false
	}
	rest := strings.TrimLeft(t, marker[:1])
	return strings.TrimRight(rest, " \t\r") == ""
}

// LiveOpen is the open tail as the page shows it: text as it came, or the block it begins
// with, when that is a code block or a table, as that block.
type LiveOpen struct {
	Kind LiveKind
	// Text is the tail, for LiveText; after the block, for the others.
	Text string
	// Code is the code of an open fence so far, its lines after the fence's first; Fence
	// is the fenced block's whole text once it is closed (highlighted then).
	Code, Fence string
	// Table is the table's whole lines so far; the line still streaming is held back.
	Table string
	// HTML is the closed fence or the table rendered, once the page is to show it.
	HTML MarkdownHTML
}

// LiveKind is what the open tail begins with.
type LiveKind int

const (
	LiveText  LiveKind = iota // text: a paragraph, a list, anything else still open
	LiveCode                  // a fenced code block, whose first line is whole
	LiveTable                 // a table, from its first row (shown once the delimiter row is whole)
)

// Open returns the open tail as the page shows it: a fence whose first line has come is a
// code block from then on, never its raw text; a table shows its whole rows as a table.
func (l *LiveMarkdown) Open() LiveOpen {
	tail := l.Tail()
	first, rest, whole := strings.Cut(tail, "\n")
	if marker := opensFence(first); marker != "" && whole && (first[0] == '`' || first[0] == '~') {
		end := 0
		for line := range strings.Lines(rest) {
			if closesFence(strings.TrimSuffix(line, "\n"), marker) && strings.HasSuffix(line, "\n") {
				fence := first + "\n" + rest[:end+len(line)]
				return LiveOpen{Kind: LiveCode, Code: rest[:end], Fence: fence, Text: rest[end+len(line):]}
			}
			end += len(line)
		}
		// A last line that may yet close the fence ("`", "``") is held back.
		if i := strings.LastIndexByte(rest, '\n'); strings.Trim(rest[i+1:], " "+marker[:1]) == "" {
			rest = rest[:i+1]
		}
		return LiveOpen{Kind: LiveCode, Code: rest}
	}
	if strings.HasPrefix(first, "|") {
		delim, _, delimWhole := strings.Cut(rest, "\n")
		switch {
		case !whole || !delimWhole && isDelimiterStart(delim):
			return LiveOpen{Kind: LiveTable} // a table, or not: the next line tells
		case isDelimiterRow(delim):
			i := strings.LastIndexByte(tail, '\n')
			return LiveOpen{Kind: LiveTable, Table: tail[:i+1]}
		}
	}
	return LiveOpen{Kind: LiveText, Text: tail}
}

// isDelimiterRow reports whether line is a table's delimiter row: cells of dashes, each
// with an optional colon at either end, between pipes.
func isDelimiterRow(line string) bool {
	line = strings.TrimSpace(line)
	if !strings.Contains(line, "-") {
		return false
	}
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	for cell := range strings.SplitSeq(line, "|") {
		c := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(cell), ":"), ":")
		if c == "" || strings.Trim(c, "-") != "" {
			return false
		}
	}
	return true
}

// isDelimiterStart reports whether line may still become a delimiter row.
func isDelimiterStart(line string) bool {
	return strings.Trim(line, "|-: \t") == ""
}

// LiveUpdate is what a page changes for a delta (see [LiveMarkdown.Delta]): Settled goes
// after the parts before it; then either Text is appended to the open tail shown, or Code
// to its open code block, or Tail, when not nil, takes the open tail's place.
type LiveUpdate struct {
	Settled    MarkdownHTML
	Text, Code string
	Tail       *LiveOpen
}

// Delta adds delta to the answer and returns what the page, which showed the answer before
// it, changes: the least it can, so that a window's fragment stays as large as what came in
// it (an open code block grows by its new text, not by the whole block again).
func (l *LiveMarkdown) Delta(delta string) LiveUpdate {
	settled, _ := l.Add(delta)
	was, now := l.shown, l.Open()
	u := LiveUpdate{Settled: settled}
	same := settled.html == ""
	switch {
	case same && was.Kind == LiveText && now.Kind == LiveText:
		u.Text = delta
	case same && was.Kind == LiveCode && now.Kind == LiveCode && was.Fence == "" && now.Fence == "" && strings.HasPrefix(now.Code, was.Code):
		u.Code = now.Code[len(was.Code):]
	case same && was.Kind == LiveTable && now.Kind == LiveTable && was.Table == now.Table:
		now = was // a row still streaming: nothing new to show
	default:
		switch {
		case now.Fence != "":
			now.HTML = Markdown(now.Fence, l.o)
		case now.Table != "":
			now.HTML = Markdown(now.Table, l.o)
		}
		u.Tail = &now
	}
	l.shown = now
	return u
}

// Shown returns the open tail as the page shows it after the last [LiveMarkdown.Delta].
func (l *LiveMarkdown) Shown() LiveOpen { return l.shown }
