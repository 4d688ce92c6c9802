package snapshot

import (
	"bytes"
	"strconv"
	"strings"
)

// A line diff (Myers' O(ND) algorithm on interned lines, after the common prefix and suffix
// are set aside) and its unified form.

// maxEditDistance bounds the work on one file: past it, the middle of the two versions is
// reported as all removed and all added (correct, not minimal), as git does with a
// diff that would take too long.
const maxEditDistance = 2000

// edit is one line of a line diff: ' ' kept, '-' removed, '+' added, with the line's
// index in the old (a) or the new (b) version.
type edit struct {
	op   byte
	a, b int
}

// splitLines splits text into lines, each with its "\n" (the last may have none).
func splitLines(text []byte) []string {
	if len(text) == 0 {
		return nil
	}
	n := bytes.Count(text, []byte("\n"))
	lines := make([]string, 0, n+1)
	s := string(text)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// diffLines returns the edits that turn a into b.
func diffLines(a, b []string) []edit {
	ids := map[string]int32{}
	intern := func(lines []string) []int32 {
		out := make([]int32, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = int32(len(ids))
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	x, y := intern(a), intern(b)
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	edits := make([]edit, 0, len(x)+len(y)-pre-suf)
	for i := range pre {
		edits = append(edits, edit{' ', i, i})
	}
	edits = append(edits, myers(x[pre:len(x)-suf], y[pre:len(y)-suf], pre, pre)...)
	for i := range suf {
		edits = append(edits, edit{' ', len(x) - suf + i, len(y) - suf + i})
	}
	return edits
}

// myers returns the shortest edit script of x into y, whose first lines have the indexes
// ax and by in the whole versions.
func myers(x, y []int32, ax, by int) []edit {
	n, m := len(x), len(y)
	all := func() []edit {
		out := make([]edit, 0, n+m)
		for i := range n {
			out = append(out, edit{'-', ax + i, by})
		}
		for j := range m {
			out = append(out, edit{'+', ax + n, by + j})
		}
		return out
	}
	if n == 0 || m == 0 {
		return all()
	}
	maxD := min(n+m, maxEditDistance)
	off := maxD + 1
	v := make([]int32, 2*maxD+3)
	var trace [][]int32
	found := -1
	for d := 0; d <= maxD && found < 0; d++ {
		// keep v's live range [-d, d] as it was at the start of this round
		trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
		for k := -d; k <= d; k += 2 {
			var px int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				px = int(v[off+k+1]) // down: an insertion
			} else {
				px = int(v[off+k-1]) + 1 // right: a deletion
			}
			py := px - k
			for px < n && py < m && x[px] == y[py] {
				px, py = px+1, py+1
			}
			v[off+k] = int32(px)
			if px >= n && py >= m {
				found = d
				break
			}
		}
	}
	if found < 0 {
		return all()
	}
	// Walk the trace back from (n, m).
	rev := make([]edit, 0, n+m)
	px, py := n, m
	for d := found; d > 0; d-- {
		prev := trace[d] // v at the start of round d: the end points of round d-1, over [-d, d]
		get := func(k int) int { return int(prev[k+d]) }
		k := px - py
		var pk int
		if k == -d || (k != d && get(k-1) < get(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		sx := get(pk)
		sy := sx - pk
		// the snake after the step
		mx, my := sx, sy
		if pk == k+1 {
			my++ // down
		} else {
			mx++ // right
		}
		for px > mx && py > my {
			px, py = px-1, py-1
			rev = append(rev, edit{' ', ax + px, by + py})
		}
		if pk == k+1 {
			py--
			rev = append(rev, edit{'+', ax + px, by + py})
		} else {
			px--
			rev = append(rev, edit{'-', ax + px, by + py})
		}
		px, py = sx, sy
	}
	for px > 0 && py > 0 {
		px, py = px-1, py-1
		rev = append(rev, edit{' ', ax + px, by + py})
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// unified writes the hunks of a unified diff (from the first "@@" line) with context lines
// of context around each change, up to max bytes; cut reports that it stopped there, at a
// line's end. added and deleted count the lines.
func unified(a, b []string, edits []edit, context, max int) (patch string, added, deleted int, cut bool) {
	for _, e := range edits {
		switch e.op {
		case '+':
			added++
		case '-':
			deleted++
		}
	}
	if added+deleted == 0 || max <= 0 {
		return "", added, deleted, added+deleted > 0
	}
	var sb strings.Builder
	line := func(prefix byte, text string) bool {
		n := 1 + len(text)
		missing := !strings.HasSuffix(text, "\n")
		if missing {
			n += 1 + len("\\ No newline at end of file\n")
		}
		if sb.Len()+n > max {
			return false
		}
		sb.WriteByte(prefix)
		sb.WriteString(text)
		if missing {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
		return true
	}
	for i := 0; i < len(edits); {
		if edits[i].op == ' ' {
			i++
			continue
		}
		// a hunk: from context lines before this change to context lines after the last
		// change that is less than 2*context+1 kept lines away
		start := max0(i - context)
		end := i
		for j := i; j < len(edits); j++ {
			if edits[j].op != ' ' {
				end = j
				continue
			}
			if j-end > 2*context {
				break
			}
		}
		stop := min(end+context+1, len(edits))
		var la, lb int
		for _, e := range edits[start:stop] {
			if e.op != '+' {
				la++
			}
			if e.op != '-' {
				lb++
			}
		}
		header := "@@ -" + hunkRange(edits[start].a, la) + " +" + hunkRange(edits[start].b, lb) + " @@\n"
		if sb.Len()+len(header) > max {
			return sb.String(), added, deleted, true
		}
		sb.WriteString(header)
		for _, e := range edits[start:stop] {
			text := ""
			if e.op == '+' {
				text = b[e.b]
			} else {
				text = a[e.a]
			}
			if !line(e.op, text) {
				return sb.String(), added, deleted, true
			}
		}
		i = stop
	}
	return sb.String(), added, deleted, false
}

func max0(i int) int { return max(i, 0) }

// hunkRange formats a hunk's range as diff -u does: "start,length", "start" for one line,
// and the line before it for none.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return strconv.Itoa(start) + ",0"
	case 1:
		return strconv.Itoa(start + 1)
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(n)
}
