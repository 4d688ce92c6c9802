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
