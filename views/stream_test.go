package views

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// streamCorpus is Markdown that answers hold: the golden corpus and shapes that straddle
// settle points (loose lists, fences with blank lines, tables, reference links).
func streamCorpus(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{
		"loose list":       "Steps:\n\n1. one\n\n2. two\n\n   more of two\n\n3. three\n\nDone.\n",
		"fence with blank": "Code:\n\n```go\nfunc a() {\n\n\treturn\n}\n```\n\nAfter.\n",
		"tilde fence":      "~~~\n```\nnot closed by backticks\n\n~~~\n\nText\n",
		"table":            "| a | b |\n|---|---|\n| 1 | 2 |\n\n## Next\n\nPara with **bold** and `code`.\n",
		"reference link":   "See [the docs][d].\n\nMore text.\n\n[d]: https://example.com/docs\n",
		"indented code":    "Para.\n\n    code\n\n    more code\n\nEnd.\n",
		"quote":            "> a quote\n\n> another\n\nText.\n",
		"numbers":          "2026 was a year.\n\n12 items.\n\n12. a list item\n",
		"thematic":         "Text\n\n---\n\n* * *\n\n*emphasis*\n",
		"para then fence":  "Here:\n```go\nx := 1\n```\nAfter, with no blank.\n",
		"list then fence":  "- a\n- b\n```sh\nls\n```\n\nText\n",
		"quote then fence": "> q\n~~~\ncode\n~~~\n",
		"indented fence":   "- item\n\n  ```\n  in the item\n  ```\n\nEnd.\n",
	}
	files, _ := filepath.Glob("testdata/markdown/golden/*.md")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	return out
}

// stream feeds src to a LiveMarkdown in deltas of random sizes and returns it with the
// page it builds: the settled parts' HTML and the tail as shown.
func stream(src string, rng *rand.Rand) (l *LiveMarkdown, settled, tail string) {
	l = NewLiveMarkdown(MarkdownOptions{})
	var page strings.Builder
	for i := 0; i < len(src); {
		n := min(len(src)-i, 1+rng.IntN(40))
		h, t := l.Add(src[i : i+n])
		if h.String() != "" {
			page.WriteString(h.String())
			tail = t
		} else {
			tail += src[i : i+n]
		}
		i += n
	}
	return l, page.String(), tail
}

// TestLiveMarkdown: however an answer is cut into deltas, the parts settle at the same
// points, what the page shows is the settled HTML followed by the open tail, and the whole
// answer's HTML equals rendering the text at once.
func TestLiveMarkdown(t *testing.T) {
	for name, src := range streamCorpus(t) {
		t.Run(name, func(t *testing.T) {
			var first string
			for seed := range uint64(20) {
				rng := rand.New(rand.NewPCG(seed, 7))
				l, settled, tail := stream(src, rng)
				if settled != l.Settled().String() || tail != l.Tail() {
					t.Fatalf("seed %d: the page's parts or tail differ from the renderer's", seed)
				}
				if seed == 0 {
					first = settled
				} else if settled != first {
					t.Fatalf("seed %d: the parts settled differently:\n%s\nvs\n%s", seed, settled, first)
				}
				if got, want := l.Whole().String(), Markdown(src, MarkdownOptions{}).String(); got != want {
					t.Fatalf("seed %d: Whole differs from Markdown:\n%s\nwant\n%s", seed, got, want)
				}
				if !strings.HasSuffix(src, tail) {
					t.Fatalf("tail %q is not the end of the text", tail)
				}
			}
		})
	}
}

// TestLiveMarkdownSettles: blocks settle once the next block begins, and what is still open
// stays text: a fence with a blank line, a loose list, an unfinished list marker.
func TestLiveMarkdownSettles(t *testing.T) {
	for _, tt := range []struct {
		name, src, tail string
	}{
		{"a paragraph, then a heading", "One.\n\n## Two", "## Two"},
		{"a paragraph not yet followed", "One.\n\n", "One.\n\n"},
		{"an open fence", "```\na\n\nb\n", "```\na\n\nb\n"},
		{"a closed fence", "```\na\n\nb\n```\n\nText", "Text"},
		{"a list that may go on", "- a\n\n- b\n\n", "- a\n\n- b\n\n"},
		{"a list that ended", "- a\n\n- b\n\nText", "Text"},
		{"a marker still ambiguous", "Para.\n\n-", "Para.\n\n-"},
		{"a number still ambiguous", "Para.\n\n12", "Para.\n\n12"},
		{"a thematic break", "Para.\n\n---\n", "---\n"},
	} {
		l := NewLiveMarkdown(MarkdownOptions{})
		l.Add(tt.src)
		if l.Tail() != tt.tail {
			t.Errorf("%s: tail = %q, want %q", tt.name, l.Tail(), tt.tail)
		}
	}
}

// TestLiveMarkdownDelta: a page that applies each update a delta brings (the settled HTML
// appended, the open end's text or code extended, or the open end replaced) shows exactly
// what the renderer says is open, however the answer is cut into deltas.
func TestLiveMarkdownDelta(t *testing.T) {
	for name, src := range streamCorpus(t) {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(20) {
				rng := rand.New(rand.NewPCG(seed, 9))
				l := NewLiveMarkdown(MarkdownOptions{})
				var settled strings.Builder
				var page LiveOpen
				for i := 0; i < len(src); {
					n := min(len(src)-i, 1+rng.IntN(40))
					u := l.Delta(src[i : i+n])
					i += n
					settled.WriteString(u.Settled.String())
					switch {
					case u.Tail != nil:
						page = *u.Tail
					case u.Code != "":
						if page.Kind != LiveCode {
							t.Fatalf("seed %d: code %q appended to a %v tail", seed, u.Code, page.Kind)
						}
						page.Code += u.Code
					case u.Text != "":
						if page.Kind != LiveText {
							t.Fatalf("seed %d: text %q appended to a %v tail", seed, u.Text, page.Kind)
						}
						page.Text += u.Text
					}
					open := l.Open()
					open.HTML, page.HTML = MarkdownHTML{}, MarkdownHTML{}
					if page != open {
						t.Fatalf("seed %d after %q: the page shows %+v, the renderer says %+v", seed, src[:i], page, open)
					}
				}
				if settled.String() != l.Settled().String() {
					t.Fatalf("seed %d: the page's settled parts differ from the renderer's", seed)
				}
			}
		})
	}
}

// TestLiveOpen: the open end of an answer is shown as the block it begins: a fence whose
// first line came is code (a last line that may close it held back), a paragraph before a
// fence settles, a table shows its whole rows once its delimiter row came.
func TestLiveOpen(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		want      LiveOpen
		settled   string
	}{
		{"a fence's first line still coming", "```g", LiveOpen{Kind: LiveText, Text: "```g"}, ""},
		{"an open fence", "```go\nfunc main() {\n\tpri", LiveOpen{Kind: LiveCode, Code: "func main() {\n\tpri"}, ""},
		{"a paragraph, then a fence", "Here:\n```sh\nls -l\n", LiveOpen{Kind: LiveCode, Code: "ls -l\n"}, "<p>Here:</p>\n"},
		{"a fence that may be closing", "```\na\n``", LiveOpen{Kind: LiveCode, Code: "a\n"}, ""},
		{"a closed fence", "```\na\n```\nafter", LiveOpen{Kind: LiveCode, Code: "a\n", Fence: "```\na\n```\n", Text: "after"}, ""},
		{"a table's first row", "| a | b |", LiveOpen{Kind: LiveTable}, ""},
		{"a table's delimiter coming", "| a | b |\n|--", LiveOpen{Kind: LiveTable}, ""},
		{"a table", "| a | b |\n|---|:-:|\n| 1 | 2 |\n| 3 |", LiveOpen{Kind: LiveTable, Table: "| a | b |\n|---|:-:|\n| 1 | 2 |\n"}, ""},
		{"pipes, not a table", "| a | b |\nplain", LiveOpen{Kind: LiveText, Text: "| a | b |\nplain"}, ""},
	} {
		l := NewLiveMarkdown(MarkdownOptions{})
		l.Delta(tt.src)
		got := l.Open()
		got.HTML = MarkdownHTML{}
		if got != tt.want {
			t.Errorf("%s: Open() = %+v, want %+v", tt.name, got, tt.want)
		}
		if l.Settled().String() != tt.settled {
			t.Errorf("%s: settled %q, want %q", tt.name, l.Settled().String(), tt.settled)
		}
	}
}

// BenchmarkLiveMarkdown streams a 20 KB answer in the deltas of 40 ms windows and reports
// the cost against rendering it once (goal under 2) and the largest fragment of one window
// (it must not grow with the answer).
func BenchmarkLiveMarkdown(b *testing.B) {
	var src strings.Builder
	corpus := streamCorpus(b)
	for src.Len() < 20_000 {
		for _, k := range []string{"assistant-message.md", "tables.md", "code-go.md", "lists.md", "headings.md"} {
			src.WriteString(corpus[k])
			src.WriteString("\n")
		}
	}
	text := src.String()
	const window = 60 // bytes in 40 ms at a brisk 1,500 bytes a second
	once := func() { Markdown(text, MarkdownOptions{}) }
	streamed := func() (largest int) {
		l := NewLiveMarkdown(MarkdownOptions{})
		for i := 0; i < len(text); i += window {
			h, tail := l.Add(text[i:min(len(text), i+window)])
			largest = max(largest, len(h.String())+len(tail))
		}
		l.Whole()
		return largest
	}
	once()
	streamed()
	var tOnce, tStream float64
	largest := 0
	for b.Loop() {
		tOnce += timeIt(once)
		tStream += timeIt(func() { largest = streamed() })
	}
	b.ReportMetric(tStream/tOnce, "x-stream-render")
	b.ReportMetric(float64(largest), "max-bytes-per-window")
	b.ReportMetric(float64(len(text)), "answer-bytes")
}

func timeIt(f func()) float64 {
	start := time.Now()
	f()
	return float64(time.Since(start))
}
