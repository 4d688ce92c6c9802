package termmd

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"myco.dev/internal/termtext"
)

// renderWith feeds in to a copy of r in pieces of size n (0: whole) and returns all it
// printed.
func renderWith(r Renderer, in string, n int) string {
	var b strings.Builder
	if n == 0 {
		b.WriteString(r.Write(in))
	} else {
		for i := 0; i < len(in); i += n {
			b.WriteString(r.Write(in[i:min(i+n, len(in))]))
		}
	}
	b.WriteString(r.Flush())
	return b.String()
}

var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// checkWidth fails t for every line of out wider than width less one.
func checkWidth(t *testing.T, out string, width int) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if w := termtext.Width(sgr.ReplaceAllString(l, "")); w > width-1 {
			t.Errorf("a line of %d columns at width %d: %q", w, width, l)
		}
	}
}

func TestTable(t *testing.T) {
	const files = "| Name | Size | Kind |\n|---|--:|:-:|\n| a.go | 12 | code |\n| main.go | 1200 | program |\n"
	for _, tt := range []struct {
		name string
		r    Renderer
		in   string
		want string
	}{
		{"aligned columns", Renderer{Plain: true}, "Files:\n" + files + "\nThat is all.\n",
			"Files:\n" +
				"Name    │ Size │  Kind\n" +
				"────────┼──────┼────────\n" +
				"a.go    │   12 │  code\n" +
				"main.go │ 1200 │ program\n" +
				"\nThat is all.\n"},
		{"ended by a line of text", Renderer{Plain: true}, "| a | b |\n| - | - |\n| 1 | 2 |\nnext **line**\n",
			"a │ b\n──┼──\n1 │ 2\nnext **line**\n"},
		{"at the end, without a line break", Renderer{Plain: true}, "| a | b |\n|---|---|\n| 1 | 2 |",
			"a │ b\n──┼──\n1 │ 2"},
		{"fewer and more cells than the header", Renderer{Plain: true}, "| a | b |\n|---|---|\n| 1 |\n| 1 | 2 | 3 |\n",
			"a │ b\n──┼──\n1 │\n1 │ 2\n"},
		{"escaped pipes and no pipe at the end", Renderer{Plain: true}, "| x | y\n|---|---\n| a \\| b | c\n",
			"x     │ y\n──────┼──\na | b │ c\n"},
		{"wide characters", Renderer{Plain: true}, "| 名前 | n |\n|---|---|\n| 日本語 | 1 |\n| ab | 2 |\n",
			"名前   │ n\n───────┼──\n日本語 │ 1\nab     │ 2\n"},
		{"no delimiter row: as written", Renderer{Plain: true}, "| a | b |\n| c | d |\ntext\n", "| a | b |\n| c | d |\ntext\n"},
		{"a delimiter of other cells: as written", Renderer{Plain: true}, "| a | b |\n|---|\n", "| a | b |\n|---|\n"},
		{"a lone pipe line: as written", Renderer{Plain: true}, "| not a table\n\nbye", "| not a table\n\nbye"},
		{"in a fence: as written", Renderer{}, "```\n| a | b |\n|---|---|\n```\n",
			dim + "```" + reset + "\n" + code + "| a | b |" + reset + "\n" + code + "|---|---|" + reset + "\n" + dim + "```" + reset + "\n"},
		{"indented four: as written", Renderer{Plain: true}, "    | a | b |\n    |---|---|\n", "    | a | b |\n    |---|---|\n"},
		{"styles in cells", Renderer{}, "| **k** | v |\n|---|---|\n| `x.go` | **big** deal |\n",
			bold + bold + "k" + reset + bold + reset + "    │ " + bold + "v" + reset + "\n" +
				"─────┼─────────\n" +
				code + "x.go" + reset + " │ " + bold + "big" + reset + " deal\n"},
		{"a header that turns out to be text is styled as text", Renderer{}, "| **a** |\nplain\n",
			"| " + bold + "a" + reset + " |\nplain\n"},
		{"two tables", Renderer{Plain: true}, "| a |\n|---|\n| 1 |\n\n| bb |\n|---|\n| 2 |\n",
			"a\n─\n1\n\nbb\n──\n2\n"},
		{"escapes made visible stay text", Renderer{Plain: true}, "| \\x1b]0;x\\x07 | b |\n|---|---|\n",
			"\\x1b]0;x\\x07 │ b\n─────────────┼──\n"},
	} {
		for _, n := range []int{0, 1, 2, 3, 7} {
			got := renderWith(tt.r, tt.in, n)
			if got != tt.want {
				t.Errorf("%s (pieces of %d):\n got %q\nwant %q", tt.name, n, got, tt.want)
			}
		}
	}
}

// TestTableFits: a table wider than the terminal has its wide columns wrapped at spaces
// (a word longer than its column broken), every line within the width and every word
// kept; a terminal too narrow for its columns gets one "header: value" line per cell.
func TestTableFits(t *testing.T) {
	in := "| Package | What it owns |\n|---|---|\n" +
		"| cli | the terminal front ends: the one-shot prompt, the chat, the remote hosts' commands |\n" +
		"| sessions | the session service, its store and runner, supercalifragilisticexpialidocious |\n"
	for _, width := range []int{80, 40, 24, 12} {
		for _, plain := range []bool{true, false} {
			out := renderWith(Renderer{Plain: plain, Width: width}, in, 0)
			checkWidth(t, out, width)
			words := strings.Fields(sgr.ReplaceAllString(out, ""))
			joined := strings.Join(words, " ")
			for _, w := range strings.Fields("Package owns cli terminal one-shot prompt, chat, commands sessions runner,") {
				if !strings.Contains(joined, w) {
					t.Errorf("width %d: %q is lost:\n%s", width, w, out)
				}
			}
			if width == 40 && plain {
				want := "Package  │ What it owns\n" +
					"─────────┼─────────────────────────────\n" +
					"cli      │ the terminal front ends: the\n" +
					"         │ one-shot prompt, the chat,\n" +
					"         │ the remote hosts' commands\n" +
					"sessions │ the session service, its\n" +
					"         │ store and runner,\n" +
					"         │ supercalifragilisticexpialid\n" +
					"         │ ocious\n"
				if out != want {
					t.Errorf("width 40:\n%s\nwant\n%s", out, want)
				}
			}
		}
	}
	out := renderWith(Renderer{Plain: true, Width: 10}, "| a | b | c |\n|---|---|---|\n| one | two | three |\n| 4 | 5 | 6 |\n", 0)
	if want := "a: one\nb: two\nc: three\n────────\na: 4\nb: 5\nc: 6\n"; out != want {
		t.Errorf("width 10, three columns:\n%s\nwant\n%s", out, want)
	}
}

// TestTableStyledWrap: a style open where a cell wraps is closed at the line's end and
// opened again on the next, so the separator is never styled.
func TestTableStyledWrap(t *testing.T) {
	out := renderWith(Renderer{Width: 20}, "| k | v |\n|---|---|\n| x | **one two three four** |\n", 0)
	checkWidth(t, out, 20)
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n")[2:] {
		if !strings.HasSuffix(l, reset) || !strings.Contains(l, "│ "+bold) {
			t.Errorf("a wrapped line does not open and close its style: %q", l)
		}
	}
}

// TestTableBounded: a long table is laid out in blocks as it streams, not held to its end.
func TestTableBounded(t *testing.T) {
	var r Renderer
	r.Plain = true
	first := r.Write("| n | square |\n|---|---|\n")
	var b strings.Builder
	b.WriteString(first)
	shown := 0
	for i := range 500 {
		b.WriteString(r.Write(fmt.Sprintf("| %d | %d |\n", i, i*i)))
		if shown == 0 && b.Len() > 0 {
			shown = i + 1
		}
	}
	b.WriteString(r.Write("done\n"))
	b.WriteString(r.Flush())
	if shown == 0 || shown > maxTableRows {
		t.Errorf("the first rows showed after %d rows, want by %d", shown, maxTableRows)
	}
	out := b.String()
	for _, want := range []string{"0   │ 0\n", "499 │ 249001\n", "\ndone\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	if n := strings.Count(out, "n   │ square"); n != 1 {
		t.Errorf("the header shows %d times, want once", n)
	}
	// A line too long to be a row ends the table and is written as text.
	long := "| " + strings.Repeat("x", maxRowBytes+10) + " |\n"
	if got := renderWith(Renderer{Plain: true}, "| a |\n|---|\n| 1 |\n"+long, 5); got != "a\n─\n1\n"+long {
		t.Errorf("a row of %d bytes: %q…", len(long), got[:min(len(got), 40)])
	}
}

func FuzzTable(f *testing.F) {
	f.Add("a|b", "x **y**|`z`", 40)
	f.Add("日本|\u0301x", "one two three four five six|7", 12)
	f.Fuzz(func(t *testing.T, header, row string, width int) {
		width = 2 + abs(width)%160
		clean := func(s string) string {
			return strings.NewReplacer("\n", " ", "\r", " ").Replace(termtext.Safe(s))
		}
		cols := strings.Count(clean(header), "|") - strings.Count(clean(header), `\|`) + 1
		in := "| " + clean(header) + " |\n|" + strings.Repeat("---|", cols) + "\n| " + clean(row) + " |\n"
		for _, plain := range []bool{true, false} {
			whole := renderWith(Renderer{Plain: plain, Width: width}, in, 0)
			if got := renderWith(Renderer{Plain: plain, Width: width}, in, 1); got != whole {
				t.Fatalf("byte by byte %q, whole %q", got, whole)
			}
			// A table's lines fit; a line too long to be a row is written as text.
			if width >= 3 && len(in) < maxRowBytes {
				checkWidth(t, whole, width)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
