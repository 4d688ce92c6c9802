package views

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a-h/templ"
	"golang.org/x/net/html"
)

// What the component tests use: render a component, parse what it wrote as a browser
// would, and query the tree with small CSS selectors.

// render renders c and returns its HTML.
func render(t *testing.T, c templ.Component) string {
	t.Helper()
	var b bytes.Buffer
	if err := c.Render(t.Context(), &b); err != nil {
		t.Fatalf("Render: %v", err)
	}
	return b.String()
}

// parse parses HTML, a page or a fragment, into a document.
func parse(t *testing.T, s string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		t.Fatalf("html.Parse: %v", err)
	}
	return doc
}

// tree renders c and parses it.
func tree(t *testing.T, c templ.Component) *html.Node {
	t.Helper()
	return parse(t, render(t, c))
}

// all returns the elements under n that match sel, in document order. A selector is
// compound selectors joined by white space (a descendant) or " > " (a child); a compound
// is an optional tag name (or *) followed by any of #id, .class, [attr] and [attr=value]
// (unquoted; the value may hold spaces).
func all(n *html.Node, sel string) []*html.Node {
	steps := parseSelector(sel)
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(c *html.Node) {
		if c.Type == html.ElementNode && matchSteps(c, steps) {
			out = append(out, c)
		}
		for k := c.FirstChild; k != nil; k = k.NextSibling {
			walk(k)
		}
	}
	for k := n.FirstChild; k != nil; k = k.NextSibling {
		walk(k)
	}
	return out
}

// one returns the one element under n that matches sel, failing the test if there is none
// or more.
func one(t *testing.T, n *html.Node, sel string) *html.Node {
	t.Helper()
	found := all(n, sel)
	if len(found) != 1 {
		t.Fatalf("%q matches %d elements, want 1 in:\n%s", sel, len(found), outerHTML(n))
	}
	return found[0]
}

// none fails the test if an element under n matches sel.
func none(t *testing.T, n *html.Node, sel string) {
	t.Helper()
	if found := all(n, sel); len(found) > 0 {
		t.Errorf("%q matches %d elements, want none: %s", sel, len(found), outerHTML(found[0]))
	}
}

// step is one compound selector; child says that the step before it must match the
// parent, not any ancestor.
type step struct {
	sel   string
	child bool
}

func parseSelector(sel string) []step {
	var steps []step
	var cur strings.Builder
	child, depth := false, 0
	flush := func() {
		if cur.Len() > 0 {
			steps = append(steps, step{cur.String(), child})
			cur.Reset()
			child = false
		}
	}
	for _, r := range sel {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0 && r == ' ':
			flush()
			continue
		case depth == 0 && r == '>':
			flush()
			child = true
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	return steps
}

func matchSteps(n *html.Node, steps []step) bool {
	last := steps[len(steps)-1]
	if !matchCompound(n, last.sel) {
		return false
	}
	rest := steps[:len(steps)-1]
	if len(rest) == 0 {
		return true
	}
	for p := n.Parent; p != nil && p.Type == html.ElementNode; p = p.Parent {
		if matchSteps(p, rest) {
			return true
		}
		if last.child {
			return false
		}
	}
	return false
}

func matchCompound(n *html.Node, sel string) bool {
	i := strings.IndexAny(sel, "#.[")
	if i < 0 {
		i = len(sel)
	}
	if tag := sel[:i]; tag != "" && tag != "*" && tag != n.Data {
		return false
	}
	for rest := sel[i:]; rest != ""; {
		kind := rest[0]
		var tok string
		if kind == '[' {
			end := strings.IndexByte(rest, ']')
			tok, rest = rest[1:end], rest[end+1:]
		} else {
			end := strings.IndexAny(rest[1:], "#.[")
			if end < 0 {
				end = len(rest) - 1
			}
			tok, rest = rest[1:end+1], rest[end+1:]
		}
		switch kind {
		case '#':
			if v, _ := attrOf(n, "id"); v != tok {
				return false
			}
		case '.':
			if !hasClass(n, tok) {
				return false
			}
		case '[':
			k, v, eq := strings.Cut(tok, "=")
			got, ok := attrOf(n, k)
			if !ok || (eq && got != v) {
				return false
			}
		}
	}
	return true
}

func attrOf(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// attr returns n's attribute key, or "".
func attr(n *html.Node, key string) string {
	v, _ := attrOf(n, key)
	return v
}

func hasClass(n *html.Node, c string) bool {
	v, _ := attrOf(n, "class")
	for _, f := range strings.Fields(v) {
		if f == c {
			return true
		}
	}
	return false
}

// textContent is n's text content, white space runs folded into one space and trimmed.
func textContent(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
		for k := c.FirstChild; k != nil; k = k.NextSibling {
			walk(k)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// rawContent is n's text content as it is.
func rawContent(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
		for k := c.FirstChild; k != nil; k = k.NextSibling {
			walk(k)
		}
	}
	walk(n)
	return b.String()
}

func outerHTML(n *html.Node) string {
	var b bytes.Buffer
	if n.Type == html.DocumentNode {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			html.Render(&b, c)
		}
		return b.String()
	}
	html.Render(&b, n)
	return b.String()
}

// golden compares got with testdata/<TestName>/<name>.golden, or rewrites it under
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	dir := filepath.Join("testdata", strings.Split(t.Name(), "/")[0])
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	goldenFile(t, filepath.Join(dir, name+".golden"), []byte(got))
}
