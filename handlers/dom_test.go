package handlers

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// A small DOM applier: it does to a parsed page what htmx does with the partials of an
// event stream, so a test can compare a page kept live by its stream with a fresh render,
// without a browser.

// parsePage parses a whole page.
func parsePage(t *testing.T, page string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func byID(n *html.Node, id string) *html.Node {
	if n.Type == html.ElementNode {
		for _, a := range n.Attr {
			if a.Key == "id" && a.Val == id {
				return n
			}
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := byID(c, id); f != nil {
			return f
		}
	}
	return nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// applyPartials applies the hx-partial elements of data to doc, in order.
func applyPartials(t *testing.T, doc *html.Node, data string) {
	t.Helper()
	body := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
	nodes, err := html.ParseFragment(strings.NewReader(data), body)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range nodes {
		if p.Type != html.ElementNode || p.Data != "hx-partial" {
			continue
		}
		target := strings.TrimPrefix(attr(p, "hx-target"), "#")
		el := byID(doc, target)
		if el == nil {
			continue // htmx skips a partial whose target is missing
		}
		var kids []*html.Node
		for c := p.FirstChild; c != nil; c = c.NextSibling {
			kids = append(kids, c)
		}
		for _, k := range kids {
			p.RemoveChild(k)
		}
		switch attr(p, "hx-swap") {
		case "beforeend":
			for _, k := range kids {
				el.AppendChild(k)
			}
		case "innerHTML":
			for c := el.FirstChild; c != nil; {
				next := c.NextSibling
				el.RemoveChild(c)
				c = next
			}
			for _, k := range kids {
				el.AppendChild(k)
			}
		case "outerHTML":
			for _, k := range kids {
				el.Parent.InsertBefore(k, el)
			}
			el.Parent.RemoveChild(el)
		default:
			t.Fatalf("unknown swap %q", attr(p, "hx-swap"))
		}
	}
}

// outer renders the element with id, with white space between tags dropped.
func outer(t *testing.T, doc *html.Node, id string) string {
	t.Helper()
	el := byID(doc, id)
	if el == nil {
		t.Fatalf("no #%s", id)
	}
	var b bytes.Buffer
	if err := html.Render(&b, el); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// findAll returns the elements under n with tag name tag, in document order.
func findAll(n *html.Node, tag string) []*html.Node {
	var out []*html.Node
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == tag {
			out = append(out, c)
		}
		out = append(out, findAll(c, tag)...)
	}
	return out
}

// textOf is n's text content with runs of white space folded into one space, trimmed.
func textOf(n *html.Node) string {
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
