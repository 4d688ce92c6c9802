// Package termmd renders a model's Markdown answer for a terminal as it streams: headings
// and **strong** text bold, `code` spans and fenced code blocks in colour, the fences
// dimmed, and tables (GFM's, their lines starting with a pipe) as aligned columns fitted
// to the terminal's width. The markers of a span are dropped once its closer arrives; a
// span that does not close on its line (`**kwargs`, a lone backquote) is printed as it was
// written. Only the text of an open span, the start of a line that may still become a
// heading or a fence, and a table until its end are held back, each within a bound
// ([maxHeld], [maxTableBytes]), so the answer still streams. Without styles
// ([Renderer.Plain]) the text is written as it came, but for its tables.
//
// The input must already be safe for a terminal ([myco.dev/internal/termtext.Safe]): the
// renderer adds SGR sequences, spaces and box-drawing characters, and nothing else.
package termmd

import (
	"strings"
)

// The SGR sequences of the styles.
const (
	bold  = "\x1b[1m"
	code  = "\x1b[32m" // green: cyan, yellow and red mark the chat's tool, warning and error lines
	dim   = "\x1b[2m"
	reset = "\x1b[0m"
)

// maxHeld bounds the text held after a span's opener while its closer is awaited.
const maxHeld = 256

// Renderer renders one answer. Its zero value is ready, with styles; it is not safe for
// concurrent use.
type Renderer struct {
	// Plain leaves the text unstyled, as written, and lays out only its tables.
	Plain bool
	// Width is the terminal's columns, which a table is fitted to; 0 means 80.
	Width int

	out strings.Builder // what Write returns

	midLine bool            // the line's start has been decided (plain, heading or fence)
	prefix  strings.Builder // the line's first bytes, held while they may open a heading or fence
	line    string          // the style of the whole line: bold (a heading), dim (a fence), code
	fence   string          // the opening fence of the code block we are in ("```"), or ""

	span string          // the open span's marker: "**" or "`"; "" when none is open
	held strings.Builder // the text after span's opener, held until its closer
	star bool            // one '*' is held: it may be the start of "**"

	tbl       *table          // the table held, or the line that may start one
	row       strings.Builder // the line starting with a pipe held now, until its end
	inRow     bool            // the bytes go to row
	replaying bool            // held lines that made no table are written out: no table starts
}

// Write styles s, the next piece of the answer, and returns what to print now.
func (r *Renderer) Write(s string) string {
	r.out.Reset()
	for i := 0; i < len(s); i++ {
		r.byte(s[i])
	}
	return r.out.String()
}

// Flush returns everything still held (a table laid out, the rest as written), with the
// style reset, and readies the renderer for a new answer.
func (r *Renderer) Flush() string {
	r.out.Reset()
	if r.inRow {
		r.endRow(false)
	}
	r.endTable()
	r.release()
	r.out.WriteString(r.prefix.String())
	if r.line != "" {
		r.out.WriteString(reset)
	}
	s := r.out.String()
	*r = Renderer{Plain: r.Plain, Width: r.Width}
	return s
}

func (r *Renderer) byte(c byte) {
	if r.inRow {
		r.rowByte(c)
		return
	}
	if c == '\n' {
		r.endLine()
		return
	}
	if !r.midLine {
		r.prefix.WriteByte(c)
		r.decide(false)
		return
	}
	r.inline(c)
}

// endLine ends a line: what is held goes out as written, the line's style is reset.
func (r *Renderer) endLine() {
	if !r.midLine {
		r.decide(true)
		if r.inRow {
			r.endRow(true)
			return
		}
	}
	r.release()
	if r.line != "" {
		r.out.WriteString(reset)
	}
	r.out.WriteByte('\n')
	r.midLine, r.line = false, ""
}

// decide looks at the line's first bytes, held in prefix: once they are a fence, a
// heading or neither, the line's style is set and they go out. end is set at the line's
// end, when no more can come.
func (r *Renderer) decide(end bool) {
	p := r.prefix.String()
	fence, more := fencePrefix(p)
	if more && !end {
		return // the line may still open or close a fence, or its run of markers goes on
	}
	if r.fence == "" && !r.replaying && tableRow(p) {
		r.prefix.Reset()
		r.startRow(p)
		return
	}
	if r.tbl != nil {
		// A line that is no table's row: the table held before it goes out first.
		r.prefix.Reset()
		r.endTable()
		r.prefix.WriteString(p)
	}
	if fence != "" && (r.fence == "" || fence[0] == r.fence[0] && len(fence) >= len(r.fence)) {
		if r.fence == "" {
			r.fence = fence
		} else {
			r.fence = ""
		}
		r.start(dim, p)
		return
	}
	if r.fence != "" {
		r.start(code, p) // a line of the code block
		return
	}
	heading, may := headingPrefix(p)
	switch {
	case heading:
		r.start(bold, p)
	case !may || end:
		r.prefix.Reset()
		r.midLine = true
		for i := 0; i < len(p); i++ {
			r.inline(p[i])
		}
	}
}

// start begins a line in style, with its first bytes p.
func (r *Renderer) start(style, p string) {
	if r.Plain {
		style = ""
	}
	r.prefix.Reset()
	r.midLine, r.line = true, style
	r.out.WriteString(style + p)
}

// fencePrefix returns the fence p opens with (up to three spaces, then three or more
// backquotes or tildes), if any, and whether p is still only spaces and one run of markers,
// so that more bytes may yet make, or lengthen, a fence.
func fencePrefix(p string) (fence string, more bool) {
	t := strings.TrimLeft(p, " ")
	if len(p)-len(t) > 3 {
		return "", false
	}
	if t == "" {
		return "", true
	}
	c := t[0]
	if c != '`' && c != '~' {
		return "", false
	}
	n := len(t) - len(strings.TrimLeft(t, string(c)))
	if n < 3 {
		return "", n == len(t)
	}
	return t[:n], n == len(t)
}

// headingPrefix reports whether p is a complete heading start (up to three spaces, one to
// six '#', a space) and whether p may still become one.
func headingPrefix(p string) (heading, ok bool) {
	t := strings.TrimLeft(p, " ")
	if len(p)-len(t) > 3 {
		return false, false
	}
	n := len(t) - len(strings.TrimLeft(t, "#"))
	switch {
	case n == len(t):
		return false, n <= 6
	case n == 0 || n > 6:
		return false, false
	default:
		return t[n] == ' ', t[n] == ' '
	}
}

// inline styles one byte of a line that is not a fence's.
func (r *Renderer) inline(c byte) {
	if r.fence != "" || r.Plain {
		r.out.WriteByte(c)
		return
	}
	if r.star {
		r.star = false
		if c == '*' {
			r.marker("**")
			return
		}
		r.text('*')
	}
	switch {
	case c == '*' && r.span != "`":
		r.star = true
	case c == '`':
		r.marker("`")
	default:
		r.text(c)
	}
}

// marker handles a span marker m ("**" or "`").
func (r *Renderer) marker(m string) {
	switch {
	case r.span == "":
		r.span = m
		r.held.Reset()
	case r.span == m && r.held.Len() > 0 && (m == "`" || !isSpace(r.held.String()[r.held.Len()-1])):
		style := bold
		if m == "`" {
			style = code
		}
		r.out.WriteString(style + r.held.String() + reset + r.line)
		r.span = ""
		r.held.Reset()
	case r.span == m:
		// An empty span or a closer after a space: not a span after all.
		r.release()
		r.out.WriteString(m)
	default:
		r.held.WriteString(m) // "**" inside `code`, or "`" inside strong text
	}
	r.bound()
}

// text handles one byte of text: held while a span is open, else written.
func (r *Renderer) text(c byte) {
	if r.span == "" {
		r.out.WriteByte(c)
		return
	}
	if r.span == "**" && r.held.Len() == 0 && isSpace(c) {
		// "** " does not open strong text.
		r.span = ""
		r.out.WriteString("**")
		r.out.WriteByte(c)
		return
	}
	r.held.WriteByte(c)
	r.bound()
}

// bound gives up a span whose closer has not come within maxHeld bytes.
func (r *Renderer) bound() {
	if r.held.Len() > maxHeld {
		r.release()
	}
}

// release writes what is held, as written: a lone '*', an open span's marker and text.
func (r *Renderer) release() {
	if r.span != "" {
		r.out.WriteString(r.span + r.held.String())
		r.span = ""
		r.held.Reset()
	}
	if r.star {
		r.out.WriteByte('*')
		r.star = false
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }
