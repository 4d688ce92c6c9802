package views

import "strings"

// diffMaxLines bounds the lines a diff shows; diffMaxWork bounds the line comparisons of
// the longest-common-subsequence table, past which the diff is all removals then
// additions.
const (
	diffMaxLines = 400
	diffMaxWork  = 4 << 20
)

// Diff returns the unified diff that turns old into new, line by line: unchanged lines as
// context, removed ones with '-', added ones with '+'.
func Diff(path, old, new string) *DiffView {
	a, b := splitLines(old), splitLines(new)
	d := &DiffView{Path: path, OnlyAdditions: len(a) == 0}
	var ops []DiffLine
	if len(a)*len(b) > diffMaxWork {
		for _, l := range a {
			ops = append(ops, DiffLine{'-', l})
		}
		for _, l := range b {
			ops = append(ops, DiffLine{'+', l})
		}
	} else {
		ops = lcsDiff(a, b)
	}
	for _, op := range ops {
		switch op.Op {
		case '+':
			d.Added++
		case '-':
			d.Gone++
		}
	}
	if len(ops) > diffMaxLines {
		ops, d.Cut = ops[:diffMaxLines], true
	}
	d.Lines = ops
	return d
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// lcsDiff diffs a and b through their longest common subsequence.
func lcsDiff(a, b []string) []DiffLine {
	n, m := len(a), len(b)
	// l[i][j] is the LCS length of a[i:] and b[j:].
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var out []DiffLine
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, DiffLine{' ', a[i]})
			i, j = i+1, j+1
		case l[i+1][j] >= l[i][j+1]:
			out = append(out, DiffLine{'-', a[i]})
			i++
		default:
			out = append(out, DiffLine{'+', b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, DiffLine{'-', a[i]})
	}
	for ; j < m; j++ {
		out = append(out, DiffLine{'+', b[j]})
	}
	return out
}
