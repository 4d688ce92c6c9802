package termmd

import (
	"regexp"
	"strings"
	"testing"
)

// render feeds in to a renderer in pieces of size n (0: whole) and returns all it printed.
func render(in string, n int) string {
	var r Renderer
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

func TestRender(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain", "just text\nand more", "just text\nand more"},
		{"strong", "a **big** deal\n", "a " + bold + "big" + reset + " deal\n"},
		{"code span", "run `go test` now", "run " + code + "go test" + reset + " now"},
		{"stars inside code", "`a**b`", code + "a**b" + reset},
		{"code inside strong", "**see `x`**", bold + "see `x`" + reset},
		{"kwargs stays", "pass **kwargs to f\nnext", "pass **kwargs to f\nnext"},
		{"lone backquote stays", "it's a ` mark\n", "it's a ` mark\n"},
		{"stars with spaces stay", "2 ** 3 and a * b", "2 ** 3 and a * b"},
		{"closer after space stays", "**a **b", "**a **b"},
		{"empty span stays", "`` and ****", "`` and ****"},
		{"single star stays", "*emphasis* and 2*3", "*emphasis* and 2*3"},
		{"list item", "* one\n* **two**\n", "* one\n* " + bold + "two" + reset + "\n"},
		{"heading", "# Title\nbody", bold + "# Title" + reset + "\nbody"},
		{"heading with code", "## Use `x`\n", bold + "## Use " + code + "x" + reset + bold + reset + "\n"},
		{"not a heading", "#hashtag and ####### seven\n", "#hashtag and ####### seven\n"},
		{"fence", "```go\nx := `a`\n**not bold**\n```\nafter **b**\n",
			dim + "```go" + reset + "\n" + code + "x := `a`" + reset + "\n" + code + "**not bold**" + reset + "\n" +
				dim + "```" + reset + "\nafter " + bold + "b" + reset + "\n"},
		{"tilde fence and a shorter closer inside", "~~~~\n~~~\n~~~~\n", dim + "~~~~" + reset + "\n" + code + "~~~" + reset + "\n" + dim + "~~~~" + reset + "\n"},
		{"unclosed fence at the end", "```\ncode", dim + "```" + reset + "\n" + code + "code" + reset},
		{"indented four is no fence", "    ```\n", "    ```\n"},
		{"blank lines", "\n\n**x**\n", "\n\n" + bold + "x" + reset + "\n"},
		{"span does not cross lines", "**a\nb**", "**a\nb**"},
		{"held prefix at the end", "##", "##"},
		{"escaped text stays", `\x1b]0;x\x07 **ok**`, `\x1b]0;x\x07 ` + bold + "ok" + reset},
	} {
		for _, n := range []int{0, 1, 2, 3} {
			if got := render(tt.in, n); got != tt.want {
				t.Errorf("%s (pieces of %d):\n got %q\nwant %q", tt.name, n, got, tt.want)
			}
		}
	}
}

// TestHeldIsBounded: an opener whose closer never comes holds at most maxHeld bytes, so
// the answer keeps streaming.
func TestHeldIsBounded(t *testing.T) {
	var r Renderer
	var b strings.Builder
	b.WriteString(r.Write("`"))
	long := strings.Repeat("x", 1000)
	for i := range long {
		b.WriteString(r.Write(long[i : i+1]))
		if b.Len() == 0 && i > maxHeld {
			t.Fatalf("nothing printed after %d bytes", i+1)
		}
	}
	if got := b.String() + r.Flush(); got != "`"+long {
		t.Errorf("got %q", got)
	}
}

// TestFlushReadies: Flush ends an answer; a fence left open does not style the next one.
func TestFlushReadies(t *testing.T) {
	var r Renderer
	r.Write("```\nin code")
	if got := r.Flush(); got != reset {
		t.Errorf("Flush = %q, want the reset", got)
	}
	if got := r.Write("plain\n"); got != "plain\n" {
		t.Errorf("after Flush: %q", got)
	}
}

// tableLine matches a line that may start a table.
var tableLine = regexp.MustCompile(`(?m)^ {0,3}\|`)

func FuzzRender(f *testing.F) {
	f.Add("a **b** `c`\n```\nd\n```\n# e")
	f.Fuzz(func(t *testing.T, in string) {
		whole := render(in, 0)
		if got := render(in, 1); got != whole {
			t.Fatalf("byte by byte %q, whole %q", got, whole)
		}
		if tableLine.MatchString(in) {
			return // a table is laid out: the checks of its own are FuzzTable's
		}
		// Dropping the styles leaves the input less only the markers of closed spans.
		plain := strings.NewReplacer(bold, "", code, "", dim, "", reset, "").Replace(whole)
		if strings.Count(plain, "\n") != strings.Count(in, "\n") || len(plain) > len(in) {
			t.Fatalf("in %q, out %q", in, plain)
		}
	})
}
