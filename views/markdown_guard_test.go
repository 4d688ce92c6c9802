package views

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestMarkdownTooCostly(t *testing.T) {
	const n = 256 << 10
	for _, tt := range []struct {
		name string
		src  string
	}{
		{"nested quotes", strings.Repeat(">", n)},
		{"nested lists", strings.Repeat("- ", n/2)},
		{"nested ordered lists", strings.Repeat("1. ", n/3)},
		{"quotes and lists", strings.Repeat("> - ", n/4)},
		{"unclosed link destinations", strings.Repeat("[a](", n/4)},
		{"mixed emphasis", strings.Repeat("*a_", n/3)},
		{"mixed emphasis over lines", strings.Repeat("*a_*a_*a_*a_*a_*a_*a_*a_\n", n/25)},
		{"reference definitions", strings.Repeat("[a]: b\n", n/7)},
		{"padded table", "|" + strings.Repeat("a|", 500) + "\n|" + strings.Repeat("-|", 500) + "\n" + strings.Repeat("|x\n", 3000)},
		{"padded table in a quote", "> |" + strings.Repeat("a|", 500) + "\n> |" + strings.Repeat("-|", 500) + "\n" + strings.Repeat("> |x\n", 3000)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !tooCostly(tt.src) {
				t.Fatalf("tooCostly(%.40q…) = false, want true", tt.src) // rendering it would take minutes
			}
			if out := Markdown(tt.src, mdOptions).String(); !strings.HasPrefix(out, "<p><em>Shown unformatted") {
				t.Errorf("Markdown(%.40q…) = %.80q…, want the plain text", tt.src, out)
			}
		})
	}
	t.Run("too long", func(t *testing.T) {
		src := strings.Repeat("word ", MaxMarkdownBytes/5+1)
		if out := Markdown(src, mdOptions).String(); !strings.HasPrefix(out, "<p><em>Shown unformatted") {
			t.Errorf("Markdown of %d bytes = %.80q…, want the plain text", len(src), out)
		}
	})
	t.Run("plain text is escaped", func(t *testing.T) {
		out := Markdown(strings.Repeat(">", n)+"<img src=https://x.example/a.png>", mdOptions).String()
		checkMarkdownSafe(t, out, mdOptions)
	})
	// Legitimate documents, however long, are formatted.
	legit := map[string]string{}
	for path, src := range mdCorpus(t, "golden") {
		legit[path] = src
	}
	var big strings.Builder
	for big.Len() < MaxMarkdownBytes-8<<10 {
		big.WriteString(legit[filepath.Join("testdata", "markdown", "golden", "assistant-message.md")] + "\n")
	}
	legit["long document"] = big.String()
	legit["long table"] = "| name | value |\n|---|---|\n" + strings.Repeat("| some_snake_name | `x_y` |\n", 5000)
	legit["long code block"] = "```go\n" + strings.Repeat("\tfoo_bar := *baz_qux // a_b\n", 2000) + "```\n"
	for name, src := range legit {
		if tooCostly(src) {
			t.Errorf("tooCostly(%s) = true, want false", name)
		}
	}
}
