package views

import (
	"strings"
	"testing"

	"github.com/a-h/templ"
	"golang.org/x/net/html"
)

// TestControlsHaveNames renders every page and the fragments that htmx swaps in, and fails
// on a control that assistive technology could only announce as "button" or "link": every
// button, link, summary, form field and element with a button role needs a name, from its
// text (an image's alt text included), aria-label, aria-labelledby, a <label> or title.
func TestControlsHaveNames(t *testing.T) {
	readOnly := testSessionView()
	readOnly.ReadOnly = true
	fresh := SessionView{Chrome: testChrome("New session"), ID: "s9", URL: "/profiles/default/s/s9/",
		Composer: ComposerView{Action: "/s/s9/submit", Models: []string{"fake"}, Model: "fake", Disabled: true}}
	noProfiles := testErrorView()
	noProfiles.Profiles, noProfiles.MissingAssets = nil, []string{"htmx.min.js"}
	pages := map[string]templ.Component{
		"session":           SessionPage(testSessionView()),
		"read-only session": SessionPage(readOnly),
		"new session":       SessionPage(fresh),
		"sessions":          SessionsPage(testSessionsView()),
		"no sessions":       SessionsPage(SessionsView{Chrome: testChrome("Sessions"), Filter: "archived", Models: []string{"fake"}}),
		"document":          DocumentPage(testDocumentView()),
		"error":             ErrorPage(testErrorView()),
		"one profile":       ErrorPage(noProfiles),
		"session item":      SessionItem("/profiles/default", testSessionsView().Rows[1]),
		"earlier":           Earlier(2, "/s/s1/earlier?before=2", testSessionView().Messages),
		"composer":          Composer(testSessionView().Composer),
		"new session page":  NewSessionPage(testNewSessionView()),
		"filtered sessions": SessionsPage(SessionsView{Chrome: testChrome("Sessions"), Filter: "active", Cwd: "/src/a",
			Dirs: []DirChoice{{Path: "/src/a", Label: "~/a", Current: true}, {Path: "/src/b", Label: "/src/b"}},
			Rows: []SessionRow{{ID: "s1", URL: "/s/s1/", Title: "t", Cwd: "~/a", CwdPath: "/src/a", CwdURL: "/?cwd=%2Fsrc%2Fa"}}}),
	}
	for kind, v := range testWorkspaceViews() {
		pages["workspace "+kind] = WorkspacePage(v)
	}
	for name, c := range pages {
		doc := tree(t, c)
		controls := 0
		for _, n := range all(doc, "*") {
			if !isControl(n) {
				continue
			}
			controls++
			if accessibleName(doc, n) == "" {
				t.Errorf("%s: a control without an accessible name: %s", name, outerHTML(n))
			}
		}
		if controls == 0 {
			t.Errorf("%s: no controls found; the test is not looking", name)
		}
	}
	// A busy session's dot is named, not read as "black circle".
	doc := tree(t, SessionPage(testSessionView()))
	if got := accessibleName(doc, one(t, doc, "li#side-s1 a")); got != "working Fix the build" {
		t.Errorf("busy sidebar link is named %q", got)
	}
	doc = tree(t, SessionsPage(testSessionsView()))
	if got := accessibleName(doc, one(t, doc, "li#row-s1 .meta .dot")); got != "working" {
		t.Errorf("busy row's dot is named %q", got)
	}
}

// isControl reports whether n is something a person operates.
func isControl(n *html.Node) bool {
	switch n.Data {
	case "button", "select", "textarea", "summary":
		return true
	case "a":
		_, ok := attrOf(n, "href")
		return ok
	case "input":
		return attr(n, "type") != "hidden"
	}
	role := attr(n, "role")
	return role == "button" || role == "link" || role == "checkbox" || role == "tab"
}

// accessibleName is a simplified accessible name computation: aria-labelledby, aria-label,
// a label of a form field, the value of a button input, the text content with images' alt
// text, then title.
func accessibleName(doc, n *html.Node) string {
	if ids := attr(n, "aria-labelledby"); ids != "" {
		var parts []string
		for _, id := range strings.Fields(ids) {
			if l := all(doc, "#"+id); len(l) == 1 {
				parts = append(parts, nameFromContent(l[0]))
			}
		}
		if s := strings.TrimSpace(strings.Join(parts, " ")); s != "" {
			return s
		}
	}
	if s := strings.TrimSpace(attr(n, "aria-label")); s != "" {
		return s
	}
	switch n.Data {
	case "input", "select", "textarea":
		if id := attr(n, "id"); id != "" {
			for _, l := range all(doc, "label[for="+id+"]") {
				if s := nameFromContent(l); s != "" {
					return s
				}
			}
		}
		for p := n.Parent; p != nil; p = p.Parent {
			if p.Type == html.ElementNode && p.Data == "label" {
				if s := nameFromContent(p); s != "" {
					return s
				}
			}
		}
		if t := attr(n, "type"); n.Data == "input" && (t == "submit" || t == "button" || t == "reset") {
			if s := strings.TrimSpace(attr(n, "value")); s != "" {
				return s
			}
		}
	default:
		if s := nameFromContent(n); s != "" {
			return s
		}
	}
	return strings.TrimSpace(attr(n, "title"))
}

// nameFromContent is n's text with the alt text of its images, white space folded.
func nameFromContent(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(c *html.Node) {
		switch {
		case c.Type == html.TextNode:
			b.WriteString(c.Data)
		case c.Type == html.ElementNode && c.Data == "img":
			b.WriteString(" " + attr(c, "alt") + " ")
		case c.Type == html.ElementNode && attr(c, "role") == "img":
			b.WriteString(" " + attr(c, "aria-label") + " ")
			return
		case c.Type == html.ElementNode && attr(c, "aria-hidden") == "true":
			return
		}
		for k := c.FirstChild; k != nil; k = k.NextSibling {
			walk(k)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// TestAccessibleName checks the check: it finds a nameless button, an icon link without
// alt text and an unlabelled field, and accepts each way of naming them.
func TestAccessibleName(t *testing.T) {
	doc := parse(t, `<body>
		<button id="a"></button><button id="b">Stop</button><button id="c" aria-label="Close"><span>×</span></button>
		<a id="d" href="/x"><img src="/i.png"></a><a id="e" href="/x"><img src="/i.png" alt="Shot"></a><a id="f" href="/x" title="Home"></a>
		<input id="g"><label for="h">Name</label><input id="h"><label>Query <input id="i"></label><input id="j" type="submit" value="Go">
		<select id="k"></select><span id="l-name">Model</span><select id="l" aria-labelledby="l-name"></select>
		<button id="m"><span aria-hidden="true">●</span></button><a id="n" href="/s"><span role="img" aria-label="working">●</span> Fix</a>
	</body>`)
	for id, want := range map[string]string{"a": "", "b": "Stop", "c": "Close", "d": "", "e": "Shot", "f": "Home",
		"g": "", "h": "Name", "i": "Query", "j": "Go", "k": "", "l": "Model", "m": "", "n": "working Fix"} {
		if got := accessibleName(doc, one(t, doc, "#"+id)); got != want {
			t.Errorf("accessibleName(#%s) = %q, want %q", id, got, want)
		}
	}
}
