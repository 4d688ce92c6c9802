package views

import (
	"bytes"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/html"
)

var update = flag.Bool("update", false, "rewrite the golden files and static/syntax.css")

// mdOptions are the options of the golden files and the exfiltration corpus.
var mdOptions = MarkdownOptions{
	WorkspaceDir:      "/home/u/.myco/profiles/default/workspace",
	WorkspaceURL:      "/profiles/default/workspace/",
	WorkspaceRawQuery: "raw=1",
}

// goldenFile compares got with the file want, or rewrites it under -update.
func goldenFile(t *testing.T, want string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(want, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatalf("%v (run go test ./views -update to create it)", err)
	}
	if !bytes.Equal(got, w) {
		t.Errorf("output differs from %s (go test ./views -update rewrites it):\n got: %s\nwant: %s", want, got, w)
	}
}

// mdCorpus returns the Markdown files of testdata/markdown/dir, by name.
func mdCorpus(t *testing.T, dir string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "markdown", dir, "*.md"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata/markdown/%s/*.md: %v", dir, err)
	}
	files := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = string(b)
	}
	return files
}

func TestMarkdownGolden(t *testing.T) {
	for path, src := range mdCorpus(t, "golden") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			out := Markdown(src, mdOptions).String()
			checkMarkdownSafe(t, out, mdOptions)
			goldenFile(t, strings.TrimSuffix(path, ".md")+".golden", []byte(out))
		})
	}
}

func TestMarkdownExfil(t *testing.T) {
	for path, src := range mdCorpus(t, "exfil") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			out := Markdown(src, mdOptions).String()
			checkMarkdownSafe(t, out, mdOptions)
			goldenFile(t, strings.TrimSuffix(path, ".md")+".golden", []byte(out))
		})
	}
}

// TestMarkdownExfilProject: the same hostile corpus, rendered for a session's transcript
// with a project directory, links only to the two viewers or off the origin as allowed.
func TestMarkdownExfilProject(t *testing.T) {
	for path, src := range mdCorpus(t, "exfil") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			checkMarkdownSafe(t, Markdown(src, projectOptions).String(), projectOptions)
		})
	}
}

// safeElements is every element the rendered HTML may hold, with the attributes it may
// carry. html, head and body come from the parser, not from the renderer.
var safeElements = map[string][]string{
	"html": nil, "head": nil, "body": nil,
	"p": nil, "br": nil, "hr": nil, "h1": nil, "h2": nil, "h3": nil, "h4": nil, "h5": nil, "h6": nil,
	"blockquote": nil, "ul": nil, "ol": {"start"}, "li": nil, "em": nil, "strong": nil, "del": nil,
	"code": nil, "pre": {"class"}, "span": {"class"},
	"table": nil, "thead": nil, "tbody": nil, "tr": nil, "th": {"align"}, "td": {"align"},
	"a": {"href", "title", "rel"}, "img": {"src", "alt", "title", "loading"},
}

// checkMarkdownSafe parses out as a browser would and fails t on anything that could fetch, run or
// navigate somewhere it should not: an element or attribute off the list, a link that is
// neither http(s)/mailto with the external rel nor on the workspace route, an image that
// is neither on the workspace route nor a raster data URL.
func checkMarkdownSafe(t *testing.T, out string, o MarkdownOptions) {
	t.Helper()
	checkMarkdownSafeRel(t, out, o, relExternal)
}

// checkMarkdownSafeRel is checkMarkdownSafe with the rel that external links must have.
func checkMarkdownSafeRel(t *testing.T, out string, o MarkdownOptions, rel string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatalf("parse output: %v", err)
	}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		allowed, ok := safeElements[n.Data]
		if !ok || n.Namespace != "" {
			t.Errorf("element <%s> (namespace %q) in output:\n%s", n.Data, n.Namespace, out)
			continue
		}
		attrs := map[string]string{}
		for _, a := range n.Attr {
			if a.Namespace != "" || !slices.Contains(allowed, a.Key) {
				t.Errorf("attribute %s=%q on <%s> in output:\n%s", a.Key, a.Val, n.Data, out)
			}
			attrs[a.Key] = a.Val
		}
		switch n.Data {
		case "a":
			href, ok := attrs["href"]
			if !ok {
				t.Errorf("<a> without href: %v", n.Attr)
				break
			}
			switch u := browserURL(t, href); {
			case u == nil:
			case u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "mailto":
				if attrs["rel"] != rel {
					t.Errorf("external link %q has rel %q", href, attrs["rel"])
				}
			case u.Scheme == "" && onWorkspaceRoute(href, o):
			default:
				t.Errorf("link %q is neither external nor on the workspace route", href)
			}
		case "img":
			src := attrs["src"]
			if !onWorkspaceRoute(src, o) && !dataImageURL.MatchString(src) {
				t.Errorf("image src %q is neither on the workspace route nor a raster data URL", src)
			}
		case "ol":
			if s, ok := attrs["start"]; ok && strings.Trim(s, "0123456789") != "" {
				t.Errorf("ol start %q", s)
			}
		case "pre", "span":
			if c, ok := attrs["class"]; ok && !chromaClasses.MatchString(c) {
				t.Errorf("class %q on <%s>", c, n.Data)
			}
		}
	}
}

// browserURL parses href as a browser does before it looks at the scheme: C0 controls and
// spaces trimmed, tabs and newlines removed. It fails t on what no browser would parse.
func browserURL(t *testing.T, href string) *url.URL {
	t.Helper()
	s := strings.TrimFunc(href, func(r rune) bool { return r <= ' ' })
	s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	u, err := url.Parse(s)
	if err != nil {
		t.Errorf("href %q does not parse: %v", href, err)
		return nil
	}
	return u
}

// onWorkspaceRoute reports whether s is a path under the workspace route that stays there.
func onWorkspaceRoute(s string, o MarkdownOptions) bool {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || strings.ContainsAny(s, "\\\t\n\r") {
		return false
	}
	inside := strings.HasPrefix(u.Path, o.WorkspaceURL) || o.ProjectURL != "" && strings.HasPrefix(u.Path, o.ProjectURL)
	return inside && !strings.Contains("/"+u.Path+"/", "/../") && !strings.Contains("/"+u.Path+"/", "/./")
}

func TestMarkdownLinks(t *testing.T) {
	doc := mdOptions
	doc.DocDir = "notes/2026"
	for _, tt := range []struct {
		name string
		o    MarkdownOptions
		src  string
		want string // the rendered paragraph
	}{
		{"relative", mdOptions, "[a](notes/todo.md)", `<a href="/profiles/default/workspace/notes/todo.md">a</a>`},
		{"dot segments", mdOptions, "[a](./notes/../todo.md)", `<a href="/profiles/default/workspace/todo.md">a</a>`},
		{"escaped per segment", mdOptions, "[a](<my notes/a#b?.md>)", `<a href="/profiles/default/workspace/my%20notes/a#b?.md">a</a>`},
		{"percent-encoded kept once", mdOptions, "[a](my%20notes/%3F.md)", `<a href="/profiles/default/workspace/my%20notes/%3F.md">a</a>`},
		{"fragment kept, query dropped", mdOptions, "[a](x.md?raw=1#sec%201)", `<a href="/profiles/default/workspace/x.md#sec%201">a</a>`},
		{"directory", mdOptions, "[a](notes/)", `<a href="/profiles/default/workspace/notes/">a</a>`},
		{"workspace root", mdOptions, "[a](.)", `<a href="/profiles/default/workspace/">a</a>`},
		{"absolute under workspace", mdOptions, "[a](/home/u/.myco/profiles/default/workspace/r.md)", `<a href="/profiles/default/workspace/r.md">a</a>`},
		{"file URL under workspace", mdOptions, "[a](file:///home/u/.myco/profiles/default/workspace/r%20s.md)", `<a href="/profiles/default/workspace/r%20s.md">a</a>`},
		{"file URL with a host", mdOptions, "[a](file://host/home/u/.myco/profiles/default/workspace/r.md)", `a`},
		{"absolute outside", mdOptions, "[a](/etc/passwd)", `a`},
		{"sibling directory", mdOptions, "[a](/home/u/.myco/profiles/default/workspace2/x)", `a`},
		{"climbs out", mdOptions, "[a](../x.md)", `a`},
		{"encoded climb", mdOptions, "[a](%2E%2E/x.md)", `a`},
		{"fragment only", mdOptions, "[a](#top)", `a`},
		{"query only", mdOptions, "[a](?x=1)", `a`},
		{"windows path", mdOptions, `[a](C:\x.md)`, `a`},
		{"doc dir", doc, "[a](todo.md)", `<a href="/profiles/default/workspace/notes/2026/todo.md">a</a>`},
		{"doc dir parent", doc, "[a](../../top.md)", `<a href="/profiles/default/workspace/top.md">a</a>`},
		{"doc dir climbs out", doc, "[a](../../../x.md)", `a`},
		{"doc dir absolute", doc, "[a](/home/u/.myco/profiles/default/workspace/r.md)", `<a href="/profiles/default/workspace/r.md">a</a>`},
		{"no workspace route", MarkdownOptions{}, "[a](todo.md) [b](https://go.dev)", `a <a href="https://go.dev" rel="noopener noreferrer nofollow">b</a>`},
		{"route not rooted", MarkdownOptions{WorkspaceURL: "//evil.example/"}, "[a](todo.md)", `a`},
		{"route without slash", MarkdownOptions{WorkspaceURL: "/w"}, "[a](todo.md)", `<a href="/w/todo.md">a</a>`},
		{"no workspace dir", MarkdownOptions{WorkspaceURL: "/w/"}, "[a](/home/u/x.md)", `a`},
		{"https", mdOptions, "[a](https://go.dev/x?y=1&z=2)", `<a href="https://go.dev/x?y=1&amp;z=2" rel="noopener noreferrer nofollow">a</a>`},
		{"upper-case scheme", mdOptions, "[a](HTTPS://Go.dev/)", `<a href="https://Go.dev/" rel="noopener noreferrer nofollow">a</a>`},
		{"protocol-relative", mdOptions, "[a](//go.dev/x)", `<a href="https://go.dev/x" rel="noopener noreferrer nofollow">a</a>`},
		{"http without host", mdOptions, "[a](http:go.dev)", `a`},
		{"mailto", mdOptions, "[a](mailto:x@example.com)", `<a href="mailto:x@example.com" rel="noopener noreferrer nofollow">a</a>`},
		{"title", mdOptions, `[a](https://go.dev "T & \"q\"")`, `<a href="https://go.dev" title="T &amp; &#34;q&#34;" rel="noopener noreferrer nofollow">a</a>`},
		{"ftp", mdOptions, "[a](ftp://go.dev/x)", `a`},
		{"javascript", mdOptions, "[a](javascript:alert(1))", `a`},
		{"tab inside", mdOptions, "[a](java&#9;script:alert(1))", `a`},
		{"email autolink", mdOptions, "<x@example.com>", `<a href="mailto:x@example.com" rel="noopener noreferrer nofollow">x@example.com</a>`},
		{"www autolink", mdOptions, "www.go.dev", `<a href="http://www.go.dev" rel="noopener noreferrer nofollow">www.go.dev</a>`},
		{"bad autolink", mdOptions, "<javascript:alert(1)>", `javascript:alert(1)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.TrimSpace(Markdown(tt.src, tt.o).String())
			want := "<p>" + tt.want + "</p>"
			if got != want {
				t.Errorf("Markdown(%q) =\n %s\nwant\n %s", tt.src, got, want)
			}
			checkMarkdownSafe(t, got, tt.o)
		})
	}
}

func TestMarkdownImages(t *testing.T) {
	const rel = ` rel="noopener noreferrer nofollow"`
	for _, tt := range []struct{ name, src, want string }{
		{"workspace", "![a chart](out/c.png)", `<img src="/profiles/default/workspace/out/c.png?raw=1" alt="a chart" loading="lazy">`},
		{"workspace with title", `![c](c.png "T")`, `<img src="/profiles/default/workspace/c.png?raw=1" alt="c" title="T" loading="lazy">`},
		{"query replaced, fragment kept", "![c](c.png?x=1#f)", `<img src="/profiles/default/workspace/c.png?raw=1#f" alt="c" loading="lazy">`},
		{"alt keeps text only", "![a *b* `c`](c.png)", `<img src="/profiles/default/workspace/c.png?raw=1" alt="a b c" loading="lazy">`},
		{"png data", "![d](data:image/png;base64,iVBORw0KGgo=)", `<img src="data:image/png;base64,iVBORw0KGgo=" alt="d" loading="lazy">`},
		{"remote becomes a link", "![a chart](https://x.example/c.png)", `<a href="https://x.example/c.png"` + rel + `>a chart</a>`},
		{"remote without alt shows the URL", "![](https://x.example/c.png)", `<a href="https://x.example/c.png"` + rel + `>https://x.example/c.png</a>`},
		{"remote in a link is text", "[![alt](https://x.example/c.png)](https://go.dev)", `<a href="https://go.dev"` + rel + `>alt</a>`},
		{"local in a link stays", "[![alt](c.png)](https://go.dev)", `<a href="https://go.dev"` + rel + `><img src="/profiles/default/workspace/c.png?raw=1" alt="alt" loading="lazy"></a>`},
		{"svg data is text", "![s](data:image/svg+xml;base64,PHN2Zz4=)", `s`},
		{"outside workspace is text", "![p](/etc/p.png)", `p`},
		{"javascript without alt shows it", "![](javascript:alert(1))", `javascript:alert(1)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.TrimSpace(Markdown(tt.src, mdOptions).String())
			if want := "<p>" + tt.want + "</p>"; got != want {
				t.Errorf("Markdown(%q) =\n %s\nwant\n %s", tt.src, got, want)
			}
		})
	}
}

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

// TestMarkdownPolicy feeds hostile HTML to the sanitiser alone: it must hold even if the
// renderer in front of it let something through.
func TestMarkdownPolicy(t *testing.T) {
	for _, in := range []string{
		`<img src="https://x.example/a.png" srcset="https://x.example/b.png 2x" onerror="alert(1)">`,
		`<img src="//x.example/a.png"><img src="/\x.example/a.png"><img src="data:image/svg+xml;base64,PHN2Zz4=">`,
		`<a href="javascript:alert(1)">x</a><a href="JaVaScRiPt:alert(1)">x</a><a href="java&#9;script:alert(1)">x</a>`,
		`<a href="vbscript:x">x</a><a href="data:text/html,x">x</a><a href="https://x.example" rel="opener" target="_blank" ping="https://x.example">x</a>`,
		`<p style="background:url(https://x.example/a)" id="transcript" class="streaming">x</p><span class="hidden">y</span>`,
		`<svg><image href="https://x.example/a.png"/></svg><iframe src="https://x.example"></iframe><object data="https://x.example"></object>`,
		`<form action="https://x.example"><input type="image" src="https://x.example/i.png"><button formaction="https://x.example">b</button></form>`,
		`<meta http-equiv="refresh" content="0;url=https://x.example"><link rel="stylesheet" href="https://x.example/s.css"><base href="https://x.example/">`,
		`<style>*{background:url(https://x.example/a)}</style><video poster="https://x.example/p.png"></video><table background="https://x.example/t.png"><tr><td>x</td></tr></table>`,
		`<input type="checkbox" checked disabled><pre class="ch-chroma streaming">x</pre><ol start="1 onclick=x"><li>a</li></ol><th align="justify">x</th>`,
	} {
		out := markdownPolicy().Sanitize(in)
		// The policy adds nofollow and noreferrer (which implies noopener) to an external
		// link; the renderer's own rel is the full relExternal.
		checkMarkdownSafeRel(t, out, mdOptions, "nofollow noreferrer")
		if strings.Count(out, "x.example") != strings.Count(out, `<a href="https://x.example" rel="nofollow noreferrer">`) {
			t.Errorf("Sanitize(%q) = %q: kept a reference to x.example outside a link", in, out)
		}
	}
}

// TestMarkdownRelAdded: the policy adds rel to an external link the renderer did not mark.
func TestMarkdownRelAdded(t *testing.T) {
	if got, want := markdownPolicy().Sanitize(`<a href="https://x.example/">x</a>`), `<a href="https://x.example/" rel="nofollow noreferrer">x</a>`; got != want {
		t.Errorf("Sanitize = %q, want %q", got, want)
	}
}

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

// TestMarkdownConcurrent renders from many goroutines at once (run with -race): the parser,
// policy, formatter and lexer table are shared.
func TestMarkdownConcurrent(t *testing.T) {
	srcs := mdCorpus(t, "golden")
	want := map[string]string{}
	for p, src := range srcs {
		want[p] = Markdown(src, mdOptions).String()
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for p, src := range srcs {
				if got := Markdown(src, mdOptions).String(); got != want[p] {
					t.Errorf("concurrent Markdown(%s) differs", p)
				}
			}
		})
	}
	wg.Wait()
}

func TestMarkdownComponent(t *testing.T) {
	var b bytes.Buffer
	if err := Markdown("*hi*", MarkdownOptions{}).Render(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "<p><em>hi</em></p>\n"; got != want {
		t.Errorf("Render = %q, want %q", got, want)
	}
	b.Reset()
	if err := (MarkdownHTML{}).Render(t.Context(), &b); err != nil || b.Len() != 0 {
		t.Errorf("zero MarkdownHTML rendered %q, %v; want nothing", b.String(), err)
	}
}

// projectOptions are a session transcript's: the workspace and the session's directory.
var projectOptions = MarkdownOptions{WorkspaceDir: "/home/u/.myco/profiles/default/workspace", WorkspaceURL: "/profiles/default/workspace/",
	WorkspaceRawQuery: "raw=1", ProjectDir: "/home/u/src/proj", ProjectURL: "/profiles/default/s/S1/files/"}

// TestMarkdownProjectLinks: in a session's transcript, relative links, absolute paths under
// its directory and path:line references (link destinations, code spans, words of text)
// open the project viewer, at the line; nothing that leaves the directory is a link.
func TestMarkdownProjectLinks(t *testing.T) {
	const files = "/profiles/default/s/S1/files/"
	for _, tt := range []struct{ name, src, want string }{
		{"relative", "[a](src/main.go)", `<a href="` + files + `src/main.go">a</a>`},
		{"dot segments", "[a](./src/../main.go)", `<a href="` + files + `main.go">a</a>`},
		{"directory", "[a](src/)", `<a href="` + files + `src/">a</a>`},
		{"the root", "[a](.)", `<a href="` + files + `">a</a>`},
		{"absolute inside", "[a](/home/u/src/proj/README.md)", `<a href="` + files + `README.md">a</a>`},
		{"file URL inside", "[a](file:///home/u/src/proj/a%20b.md)", `<a href="` + files + `a%20b.md">a</a>`},
		{"workspace stays the workspace's", "[a](/home/u/.myco/profiles/default/workspace/n.md)", `<a href="/profiles/default/workspace/n.md">a</a>`},
		{"a line", "[a](src/main.go:42)", `<a href="` + files + `src/main.go?line=42#L42">a</a>`},
		{"a line and column", "[a](main.go:42:7)", `<a href="` + files + `main.go?line=42#L42">a</a>`},
		{"an absolute line", "[a](/home/u/src/proj/x.go:3)", `<a href="` + files + `x.go?line=3#L3">a</a>`},
		{"an anchor", "[a](main.go#L9)", `<a href="` + files + `main.go#L9">a</a>`},
		{"a code span", "see `handlers/api.go:120` there", `see <a href="` + files + `handlers/api.go?line=120#L120"><code>handlers/api.go:120</code></a> there`},
		{"a code span that is more", "`go test ./x.go:1 -v`", `<code>go test ./x.go:1 -v</code>`},
		{"words of text", "fixed in views/markdown.go:12 and main_test.go:3.", `fixed in <a href="` + files + `views/markdown.go?line=12#L12">views/markdown.go:12</a> and <a href="` + files + `main_test.go?line=3#L3">main_test.go:3</a>.`},
		{"a name with underscores", "in a_b_c.go:5 now", `in <a href="` + files + `a_b_c.go?line=5#L5">a_b_c.go:5</a> now`},
		{"no line is no reference", "see main.go and v1.2", `see main.go and v1.2`},
		{"a URL stays one", "https://go.dev/x.go:3", `<a href="https://go.dev/x.go:3" rel="noopener noreferrer nofollow">https://go.dev/x.go:3</a>`},
		{"inside a link", "[at x.go:3](https://go.dev)", `<a href="https://go.dev" rel="noopener noreferrer nofollow">at x.go:3</a>`},
		{"climbs out", "[a](../x.go)", `a`},
		{"climbs out with a line", "see ../x.go:3 and `../../y.go:4`", `see ../x.go:3 and <code>../../y.go:4</code>`},
		{"encoded climb", "[a](%2e%2e/x.go) [b](src%2F..%2F..%2Fx)", `a b`},
		{"absolute outside", "[a](/etc/passwd) [b](/home/u/src/proj2/x)", `a b`},
		{"absolute outside with a line", "/etc/passwd:1", `/etc/passwd:1`},
		{"a hidden name is no link (issue 28)", "[a](.env) [b](/home/u/src/proj/.git/config) [c](src/.secret/x.go) see .ssh/id_ed25519:1 and `.env:2`",
			`a b c see .ssh/id_ed25519:1 and <code>.env:2</code>`},
		{"a hidden workspace file is no link", "[a](/home/u/.myco/profiles/default/workspace/.env)", `a`},
		{"a scheme is no file", "[a](mailto:12) [b](javascript:1)", `<a href="mailto:12" rel="noopener noreferrer nofollow">a</a> b`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.TrimSpace(Markdown(tt.src, projectOptions).String())
			if want := "<p>" + tt.want + "</p>"; got != want {
				t.Errorf("Markdown(%q) =\n %s\nwant\n %s", tt.src, got, want)
			}
		})
	}
	// Without a project, a transcript's relative links are the workspace's, as before.
	if got := Markdown("[a](x.md) at x.go:3", mdOptions).String(); !strings.Contains(got, `href="/profiles/default/workspace/x.md"`) || strings.Contains(got, "/s/") {
		t.Errorf("without a project: %s", got)
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
