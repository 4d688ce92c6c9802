package termmd

import (
	"strings"
	"unicode/utf8"

	"myco.dev/internal/termtext"
)

// A table is held from its first line (a line that starts with a pipe, up to three
// spaces in) until a line that is not its row ends it: its columns' widths need every row.
// Its second line must be GFM's delimiter row (`| --- | :-: |`) with as many cells as the
// first; otherwise the lines held are written out as they came. A table that grows past
// [maxTableRows] rows or [maxTableBytes] is laid out as it stands and goes on as another
// block of the same columns, so that a long table still streams.
const (
	maxTableRows  = 200
	maxTableBytes = 64 << 10
	maxRowBytes   = 8 << 10 // a longer line is no row: the table ends before it
)

// defaultWidth is the width tables are fitted to when the terminal's is not known.
const defaultWidth = 80

// table is a table held: its lines as written, then, once its delimiter row came, its
// columns' alignment and its rows.
type table struct {
	lines   []string // as written, without their line breaks: all of it until the delimiter row
	aligns  []byte   // 'l', 'c', 'r' per column; nil until the delimiter row
	header  []string
	rows    [][]string
	bytes   int  // held
	more    bool // this block continues a table laid out before: no header again
	trailNL bool // its last line ended with a line break
}

// tableRow reports whether a line starting with p is a table's row: a pipe after at most
// three spaces.
func tableRow(p string) bool {
	t := strings.TrimLeft(p, " ")
	return len(p)-len(t) <= 3 && strings.HasPrefix(t, "|")
}

// startRow holds a line that starts with p (a pipe) as a table's row.
func (r *Renderer) startRow(p string) {
	r.inRow = true
	r.row.Reset()
	r.row.WriteString(p)
}

// rowByte takes one byte of a held row; a line break ends it. A line too long to be a
// row ends the table and is written out as text.
func (r *Renderer) rowByte(c byte) {
	if c == '\n' {
		r.endRow(true)
		return
	}
	r.row.WriteByte(c)
	if r.row.Len() > maxRowBytes {
		line := r.row.String()
		r.inRow = false
		r.row.Reset()
		r.endTable()
		r.replayLine(line, false)
	}
}

// endRow ends the held row, whose line ended with a line break when nl is set.
func (r *Renderer) endRow(nl bool) {
	line := r.row.String()
	r.inRow = false
	r.row.Reset()
	t := r.tbl
	switch {
	case t == nil:
		r.tbl = &table{lines: []string{line}, bytes: len(line), trailNL: nl}
		return
	case t.aligns == nil:
		aligns, ok := delimiterRow(line, len(splitCells(t.lines[0])))
		if !ok {
			// The line held is no table's header; this one may be.
			r.endTable()
			r.tbl = &table{lines: []string{line}, bytes: len(line), trailNL: nl}
			return
		}
		t.aligns, t.header = aligns, splitCells(t.lines[0])
		t.lines = append(t.lines, line)
	default:
		t.rows = append(t.rows, splitCells(line))
		t.lines = append(t.lines, line)
	}
	t.bytes += len(line)
	t.trailNL = nl
	if len(t.rows) >= maxTableRows || t.bytes >= maxTableBytes {
		r.endTable()
		r.tbl = &table{aligns: t.aligns, header: t.header, more: true, trailNL: true}
	}
}

// endTable writes the table held, laid out, or, when it is none, its lines as they came.
func (r *Renderer) endTable() {
	t := r.tbl
	r.tbl = nil
	switch {
	case t == nil:
	case t.aligns == nil:
		for i, l := range t.lines {
			r.replayLine(l, i < len(t.lines)-1 || t.trailNL)
		}
	case t.more && len(t.rows) == 0:
	default:
		out := t.layout(r.Plain, r.width())
		if !t.trailNL {
			out = strings.TrimSuffix(out, "\n")
		}
		r.out.WriteString(out)
	}
}

// replayLine writes a held line out as text, with the styles of any other line: it starts
// no table.
func (r *Renderer) replayLine(l string, nl bool) {
	r.replaying = true
	for i := 0; i < len(l); i++ {
		r.byte(l[i])
	}
	if nl {
		r.byte('\n')
	}
	r.replaying = false
}

func (r *Renderer) width() int {
	if r.Width > 0 {
		return r.Width
	}
	return defaultWidth
}

// splitCells splits a table's row into its cells' text, trimmed: the pipes at its ends
// dropped, `\|` a pipe inside a cell.
func splitCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var cells []string
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			b.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(b.String()))
}

// delimiterRow reads GFM's delimiter row of a table of n columns: each cell hyphens with
// an optional colon at either end, which says the column's alignment.
func delimiterRow(line string, n int) (aligns []byte, ok bool) {
	cells := splitCells(line)
	if len(cells) != n {
		return nil, false
	}
	for _, c := range cells {
		left, right := strings.HasPrefix(c, ":"), strings.HasSuffix(c, ":")
		dashes := strings.Trim(c, ":")
		if dashes == "" || strings.Trim(dashes, "-") != "" || len(c)-len(dashes) > 2 {
			return nil, false
		}
		switch {
		case left && right:
			aligns = append(aligns, 'c')
		case right:
			aligns = append(aligns, 'r')
		default:
			aligns = append(aligns, 'l')
		}
	}
	return aligns, true
}

// The pieces a table is drawn with.
const (
	colSep  = " │ "
	ruleSep = "─┼─"
	rule    = "─"
)

// minColumn is the narrowest a column gets; a table whose columns cannot all have it is
// written as records, one "header: value" line per cell.
const minColumn = 6

// layout draws t in at most width columns.
func (t *table) layout(plain bool, width int) string {
	n := len(t.aligns)
	cells := make([][]cell, 0, len(t.rows)+1)
	if !t.more {
		cells = append(cells, t.cellsOf(t.header, plain, true))
	}
	for _, row := range t.rows {
		cells = append(cells, t.cellsOf(row, plain, false))
	}
	avail := width - 1 - len([]rune(colSep))*(n-1) // the last column short of the edge
	if avail < minColumn*n {
		return t.records(cells, plain, width)
	}
	natural := make([]int, n)
	for _, row := range cells {
		for i, c := range row {
			natural[i] = max(natural[i], c.width, 1)
		}
	}
	widths := fit(natural, avail)
	var b strings.Builder
	for ri, row := range cells {
		wrapped := make([][]line, n)
		height := 1
		for i, c := range row {
			wrapped[i] = wrap(c.text, widths[i])
			height = max(height, len(wrapped[i]))
		}
		for li := range height {
			var l strings.Builder
			for i := range n {
				if i > 0 {
					l.WriteString(colSep)
				}
				var piece line
				if li < len(wrapped[i]) {
					piece = wrapped[i][li]
				}
				l.WriteString(pad(piece, widths[i], t.aligns[i]))
			}
			b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
		}
		if ri == 0 && !t.more {
			for i, w := range widths {
				if i > 0 {
					b.WriteString(ruleSep)
				}
				b.WriteString(strings.Repeat(rule, w))
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// records draws a table too narrow for its columns as one block per row, one
// "header: value" line per cell, wrapped to width.
func (t *table) records(cells [][]cell, plain bool, width int) string {
	header := t.cellsOf(t.header, plain, true)
	rows := cells
	if !t.more {
		rows = cells[1:]
	}
	var b strings.Builder
	for ri, row := range rows {
		if ri > 0 || t.more {
			b.WriteString(strings.Repeat(rule, max(1, min(width-1, 8))) + "\n")
		}
		for i, c := range row {
			text := c.text
			if h := header[i].text; h != "" {
				text = h + ": " + text
			}
			for _, l := range wrap(text, max(1, width-1)) {
				b.WriteString(strings.TrimRight(l.text, " ") + "\n")
			}
		}
	}
	return b.String()
}

// fit shrinks the columns' natural widths to add up to at most avail: the narrow ones keep
// theirs, the wide ones share the rest equally.
func fit(natural []int, avail int) []int {
	widths := append([]int(nil), natural...)
	total := 0
	for _, w := range natural {
		total += w
	}
	if total <= avail {
		return widths
	}
	settled := make([]bool, len(widths))
	left, open := avail, len(widths)
	for changed := true; changed && open > 0; {
		changed = false
		share := left / open
		for i, w := range natural {
			if !settled[i] && w <= share {
				settled[i], changed = true, true
				left -= w
				open--
			}
		}
	}
	if open == 0 {
		return widths
	}
	share, extra := left/open, left%open
	for i := range widths {
		if settled[i] {
			continue
		}
		widths[i] = max(minColumn, share)
		if extra > 0 {
			widths[i]++
			extra--
		}
	}
	return widths
}

// cell is a table's cell rendered: its text with its styles, and its width in columns.
type cell struct {
	text  string
	width int
}

// cellsOf renders a row's cells, as many as the table has columns: the ones over are
// dropped and the ones missing empty, as GFM has it. With styles, a header's cells are
// bold.
func (t *table) cellsOf(row []string, plain, header bool) []cell {
	out := make([]cell, len(t.aligns))
	for i := range out {
		if i >= len(row) {
			continue
		}
		text := strings.ReplaceAll(row[i], "\t", " ")
		if !plain && text != "" {
			sub := Renderer{midLine: true}
			if header {
				sub.line = bold // as a heading's line: the style comes back after a span
				text = bold + sub.Write(text) + sub.Flush()
			} else {
				text = sub.Write(text) + sub.Flush()
			}
		}
		out[i] = cell{text: text, width: visibleWidth(text)}
	}
	return out
}

// line is one line of a wrapped cell and its width in columns.
type line struct {
	text  string
	width int
}

// pad aligns l in a column of w columns.
func pad(l line, w int, align byte) string {
	gap := max(0, w-l.width)
	switch align {
	case 'r':
		return strings.Repeat(" ", gap) + l.text
	case 'c':
		return strings.Repeat(" ", gap/2) + l.text + strings.Repeat(" ", gap-gap/2)
	}
	return l.text + strings.Repeat(" ", gap)
}

// visibleWidth is the width of s, styled text, in columns: its SGR sequences take none.
func visibleWidth(s string) int {
	n := 0
	for _, a := range atoms(s) {
		n += a.width
	}
	return n
}

// atom is a piece of styled text: an SGR sequence, a space, or another character.
type atom struct {
	s     string
	width int
	sgr   bool
	space bool
}

// atoms splits styled text into its pieces. The only escapes in it are the renderer's
// own SGR sequences: the text was made safe before.
func atoms(s string) []atom {
	var out []atom
	for i := 0; i < len(s); {
		if s[i] == '\x1b' {
			j := strings.IndexByte(s[i:], 'm')
			if j < 0 {
				j = len(s) - i - 1
			}
			out = append(out, atom{s: s[i : i+j+1], sgr: true})
			i += j + 1
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		out = append(out, atom{s: s[i : i+n], width: termtext.RuneWidth(r), space: r == ' '})
		i += n
	}
	return out
}

// wrap breaks styled text into lines of at most width columns, at spaces where it can and
// inside a word longer than a line. A style open at a break is closed at the line's end
// and opened again on the next, so every line stands alone.
func wrap(s string, width int) []line {
	var lines []line
	var cur strings.Builder
	curW, spaces := 0, 0
	style := "" // the SGR sequence in force at the end of cur
	breakLine := func() {
		text := cur.String()
		if style != "" {
			text += reset
		}
		lines = append(lines, line{text: text, width: curW})
		cur.Reset()
		cur.WriteString(style)
		curW, spaces = 0, 0
	}
	as := atoms(s)
	for i := 0; i < len(as); {
		if as[i].space {
			spaces++
			i++
			continue
		}
		j, wordW := i, 0
		for j < len(as) && !as[j].space {
			wordW += as[j].width
			j++
		}
		if curW > 0 && curW+spaces+wordW > width {
			breakLine()
		}
		if curW > 0 {
			cur.WriteString(strings.Repeat(" ", spaces))
			curW += spaces
		}
		spaces = 0
		for _, a := range as[i:j] {
			if a.sgr {
				cur.WriteString(a.s)
				style = a.s
				if a.s == reset {
					style = ""
				}
				continue
			}
			if curW > 0 && curW+a.width > width {
				breakLine()
			}
			cur.WriteString(a.s)
			curW += a.width
		}
		i = j
	}
	if curW > 0 || len(lines) == 0 {
		text := cur.String()
		if style != "" {
			text += reset
		}
		lines = append(lines, line{text: text, width: curW})
	}
	return lines
}
