package views

import (
	"strings"
	"testing"
)

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
