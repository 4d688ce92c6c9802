package views

import (
	"bytes"
	"flag"
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
