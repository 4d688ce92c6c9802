package views

import (
	"strings"
)

// Limits of [tooCostly]. goldmark has super-linear paths (yuin/goldmark#555 and its kin):
// 64 KiB of any of these shapes took seconds to minutes. Within the limits each costs
// milliseconds; legitimate text comes nowhere near them.
const (
	maxContainerDepth = 32      // block quote and list markers opening one line (">>>>", "- - -", "1. 1.")
	maxLinkScan       = 1 << 22 // per line, "](" occurrences × line length ("[a](" repeated)
	maxDelimiterWork  = 1 << 24 // per run of non-blank lines, closing × all '*', '_', '~' runs ("*a_" repeated)
	maxRefLines       = 1024    // per run, lines with "]:" (link reference definitions)
	maxTableCells     = 16384   // per run, delimiter-row columns × lines, when above the run's bytes
)

// tooCostly reports whether src has a shape that goldmark parses in super-linear time or
// that amplifies into far more HTML than source (a wide table whose short rows goldmark pads
// with empty cells). It over-approximates: it counts per run of non-blank lines, which
// bounds every paragraph, heading and table, and does not exclude code blocks. Linear.
func tooCostly(src string) bool {
	var delims, closers, refs, cols, lines, runBytes int
	for line := range strings.Lines(src) {
		if strings.TrimLeft(line, " \t\r\n") == "" {
			delims, closers, refs, cols, lines, runBytes = 0, 0, 0, 0, 0, 0
			continue
		}
		rest, depth := stripContainers(line)
		if depth > maxContainerDepth || strings.Count(line, "](")*len(line) > maxLinkScan {
			return true
		}
		lines++
		runBytes += len(line)
		d, c := delimiterRuns(line)
		delims, closers = delims+d, closers+c
		if strings.Contains(line, "]:") {
			refs++
		}
		cols = max(cols, delimiterRowColumns(rest))
		if delims*closers > maxDelimiterWork || refs > maxRefLines || (cols*lines > maxTableCells && cols*lines > runBytes) {
			return true
		}
	}
	return false
}

// delimiterRuns counts the runs of '*', '_' and '~' in line, and those of them that may
// close emphasis. goldmark's delimiter processing scans back over every run for each closer
// that finds no opener, so closers × runs bounds its work. The test is looser than
// CommonMark's flanking rules (anything not ASCII counts as punctuation), so it never
// counts fewer closers than goldmark finds.
func delimiterRuns(line string) (runs, closers int) {
	space := func(i int) bool { return i < 0 || i >= len(line) || strings.IndexByte(" \t\r\n\f\v", line[i]) >= 0 }
	alnum := func(i int) bool {
		if i < 0 || i >= len(line) {
			return false
		}
		c := line[i]
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	for i := 0; i < len(line); {
		c := line[i]
		if c != '*' && c != '_' && c != '~' {
			i++
			continue
		}
		j := i
		for j < len(line) && line[j] == c {
			j++
		}
		runs++
		if !space(i-1) && !(c == '_' && alnum(i-1) && alnum(j)) {
			closers++
		}
		i = j
	}
	return runs, closers
}

// stripContainers returns line without its leading block quote and list markers, and how
// many there were.
func stripContainers(line string) (string, int) {
	i, depth := 0, 0
	spaceAt := func(j int) bool { return j >= len(line) || strings.IndexByte(" \t\r\n", line[j]) >= 0 }
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i >= len(line) {
			return "", depth
		}
		switch c := line[i]; {
		case c == '>':
			depth, i = depth+1, i+1
			continue
		case (c == '-' || c == '*' || c == '+') && spaceAt(i+1):
			depth, i = depth+1, i+1
			continue
		case '0' <= c && c <= '9':
			j := i
			for j < len(line) && j-i < 9 && '0' <= line[j] && line[j] <= '9' {
				j++
			}
			if j < len(line) && (line[j] == '.' || line[j] == ')') && spaceAt(j+1) {
				depth, i = depth+1, j+1
				continue
			}
		}
		return line[i:], depth
	}
}

// delimiterRowColumns returns how many columns s has if it may be a table's delimiter row
// ("|:--|--:|"), or 0.
func delimiterRowColumns(s string) int {
	s = strings.TrimRight(s, "\r\n")
	if !strings.Contains(s, "-") || !strings.Contains(s, "|") || strings.Trim(s, "|:- \t") != "" {
		return 0
	}
	return strings.Count(s, "|") + 1
}
