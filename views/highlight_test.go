package views

import (
	"fmt"
	"strings"
	"testing"
)

func TestMarkdownCode(t *testing.T) {
	for _, tt := range []struct {
		name, src   string
		highlighted bool
	}{
		{"go", "```go\nfunc f() {}\n```", true},
		{"info string after the language", "```go title=x\nfunc f() {}\n```", true},
		{"alias in capitals", "```Python\nx = 1\n```", true},
		{"diff", "```diff\n-a\n+b\n```", true},
		{"unknown language", "```nosuch\nx\n```", false},
		{"file name is no language", "```main.go\nx\n```", false},
		{"no language", "```\nx\n```", false},
		{"indented", "    x", false},
		{"too long to lex", "```go\n" + strings.Repeat("x := 1\n", maxHighlightBytes/7+1) + "```", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := Markdown(tt.src, MarkdownOptions{}).String()
			if !strings.HasPrefix(out, `<pre class="ch-chroma"><code>`) {
				t.Fatalf("Markdown(%q) = %.200s, want a ch-chroma pre", tt.src, out)
			}
			if got := strings.Contains(out, `<span class="ch-`); got != tt.highlighted {
				t.Errorf("Markdown(%.40q) highlighted = %v, want %v:\n%.300s", tt.src, got, tt.highlighted, out)
			}
			checkMarkdownSafe(t, out, MarkdownOptions{})
		})
	}
}

// TestCodeLines: every line of a source file, highlighted or not, is a link target L<n>,
// numbered from the page's first line, with its text escaped.
func TestCodeLines(t *testing.T) {
	for _, tt := range []struct{ name, file, text string }{
		{"highlighted", "main.go", "package main\n\nfunc main() {}\n"},
		{"plain", "notes.unknownext", "a <b>\nc\nd\n"},
		{"over the limit", "big.go", strings.Repeat("// x\n", maxHighlightBytes/5) + "x\ny\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := CodeLines(tt.file, tt.text, 40).String()
			n := strings.Count(tt.text, "\n")
			for _, id := range []string{"L40", "L41", fmt.Sprintf("L%d", 39+n)} {
				if !strings.Contains(out, `id="`+id+`"`) || !strings.Contains(out, `href="#`+id+`"`) {
					t.Errorf("CodeLines(%s) lacks the target %s:\n%.600s", tt.file, id, out)
				}
			}
			if strings.Contains(out, `id="L39"`) || strings.Contains(out, fmt.Sprintf(`id="L%d"`, 40+n)) || strings.Contains(out, "<b>") {
				t.Errorf("CodeLines(%s) numbers or escapes wrongly:\n%.600s", tt.file, out)
			}
		})
	}
}
