package views

import (
	"bytes"
	"context"
	"html"
	"io"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/a-h/templ"
	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"myco.dev/views/lexers"
)

// MaxMarkdownBytes bounds what [Markdown] formats; a longer source is shown as plain text.
// goldmark's linear paths cost up to about 3 µs a byte (autolinks, which grow eightfold).
// A caller that pages long documents itself should page above this size.
const MaxMarkdownBytes = 512 << 10

const (
	// maxHighlightBytes bounds what chroma lexes (its backtracking regexps only time out per
	// match); a longer code block is shown unhighlighted.
	maxHighlightBytes = 64 << 10
	// classPrefix starts every chroma class, so the sanitiser can allow exactly those and
	// no class of the app's own CSS can come from Markdown.
	classPrefix = "ch-"
	// relExternal is the rel of every link that leaves the origin.
	relExternal = "noopener noreferrer nofollow"
)

// MarkdownOptions says how local links map onto the server's routes. The zero value maps
// none: only http, https and mailto links stay links, and no image but a data:image URL
// stays an image.
type MarkdownOptions struct {
	// WorkspaceDir is the absolute path of the profile's workspace directory, for example
	// /home/u/.myco/profiles/default/workspace. An absolute path (or file: URL) under it
	// is a workspace link; "" means none is.
	WorkspaceDir string
	// WorkspaceURL is the workspace viewer's route, for example /profiles/default/workspace/.
	// It must be a rooted path ("/…", not "//…"); otherwise local links become plain text.
	WorkspaceURL string
	// WorkspaceRawQuery, if set, is the query of a workspace image's URL (for example
	// "raw=1", when the route shows a page for a file and serves its bytes only with it);
	// links to workspace files keep the page.
	WorkspaceRawQuery string
	// DocDir is the directory that relative links resolve against, relative to the
	// workspace and slash-separated: the rendered document's directory ("notes/2026"), or
	// "" for the workspace root (model output). A link that climbs out of the workspace
	// becomes plain text.
	DocDir string
	// ProjectDir is the absolute path of a session's directory, and ProjectURL (a rooted
	// path such as /profiles/default/s/ID/files/) the route of its read-only viewer. With
	// both set (a session's transcript), an absolute path under ProjectDir, a relative link
	// and a `path:line` reference (a link's destination, a code span or a word of text
	// such as handlers/api.go:42) name a file of the project and link to the viewer, with
	// ?line=N#LN for a line; one that climbs out of the directory is not a link. A path
	// under WorkspaceDir stays a workspace link.
	ProjectDir string
	ProjectURL string
}

// MarkdownHTML is HTML that [Markdown] produced and sanitised. Only this package makes
// non-empty ones, so holding one is proof of that: keep it (a cache of finished messages,
// say) and render it as a templ component. The zero value renders nothing.
type MarkdownHTML struct{ html string }

// Render writes the HTML to w; it implements templ.Component.
func (m MarkdownHTML) Render(ctx context.Context, w io.Writer) error {
	return templ.Raw(m.html).Render(ctx, w)
}

// String returns the HTML.
func (m MarkdownHTML) String() string { return m.html }

// Markdown renders src, untrusted GitHub-flavoured Markdown (model output or a workspace
// document), as HTML that fetches nothing from another origin and runs nothing: raw HTML
// is dropped, links are rewritten as [MarkdownOptions] says, images that are neither
// workspace files nor data:image URLs become links, code blocks are highlighted with
// chroma classes, and the result passes a bluemonday allow-list. Its text and attribute
// values carry no raw control or bidirectional character, nor invalid UTF-8: those are
// written as visible escapes, as everywhere on a page. It is safe for concurrent use.
func Markdown(src string, o MarkdownOptions) MarkdownHTML {
	// shown runs on the sanitized HTML rather than on the source: a character reference
	// (&#x202e;) becomes the raw character only there, and code blocks, link titles and
	// alt text are covered alike. It changes only text and attribute values, since the
	// markup that goldmark, chroma and bluemonday write holds no character it rewrites
	// (URLs come percent-encoded).
	return MarkdownHTML{shown(markdownHTML(src, o))}
}

func markdownHTML(src string, o MarkdownOptions) string {
	if len(src) > MaxMarkdownBytes || tooCostly(src) {
		return plainMarkdown(src)
	}
	source := []byte(src)
	md := markdownParser()
	doc := md.Parser().Parse(text.NewReader(source))
	newLinkRewriter(o).rewrite(doc, source)
	var out bytes.Buffer
	out.Grow(len(src) + len(src)/2)
	if err := md.Renderer().Render(&out, source, doc); err != nil {
		return plainMarkdown(src) // the renderers write only to out, which does not fail
	}
	return string(markdownPolicy().SanitizeBytes(out.Bytes()))
}

// plainMarkdown is the source as escaped text, for what is too costly to format.
func plainMarkdown(src string) string {
	return "<p><em>Shown unformatted: too long or too complex to format safely.</em></p>\n<pre>" +
		html.EscapeString(src) + "</pre>\n"
}

// Limits of [tooCostly]. goldmark has super-linear paths (yuin/goldmark#555 and its kin):
// 64 KiB of any of these shapes took seconds to minutes. Within the limits each costs
// milliseconds; legitimate text comes nowhere near them.
const (
	maxContainerDepth = 32      // block quote and list markers opening one line (">>>>", "- - -", "1. 1.")
	maxLinkScan       = 1 << 22 // per line, "](" occurrences × line length ("[a](" repeated)
	maxDelimiterWork  = 1 << 24 // per run of non-blank lines, closing × all '*', '_', '~' runs ("*a_" repeated)
	maxRefLines       = 1024    // per run, lines with "]:" (link reference definitions)
	maxTableCells     = 16384   // per run, delimiter-row columns × lines, when above the run's bytes
)

// tooCostly reports whether src has a shape that goldmark parses in super-linear time or
// that amplifies into far more HTML than source (a wide table whose short rows goldmark pads
// with empty cells). It over-approximates: it counts per run of non-blank lines, which
// bounds every paragraph, heading and table, and does not exclude code blocks. Linear.
func tooCostly(src string) bool {
	var delims, closers, refs, cols, lines, runBytes int
	for line := range strings.Lines(src) {
		if strings.TrimLeft(line, " \t\r\n") == "" {
			delims, closers, refs, cols, lines, runBytes = 0, 0, 0, 0, 0, 0
			continue
		}
		rest, depth := stripContainers(line)
		if depth > maxContainerDepth || strings.Count(line, "](")*len(line) > maxLinkScan {
			return true
		}
		lines++
		runBytes += len(line)
		d, c := delimiterRuns(line)
		delims, closers = delims+d, closers+c
		if strings.Contains(line, "]:") {
			refs++
		}
		cols = max(cols, delimiterRowColumns(rest))
		if delims*closers > maxDelimiterWork || refs > maxRefLines || (cols*lines > maxTableCells && cols*lines > runBytes) {
			return true
		}
	}
	return false
}

// delimiterRuns counts the runs of '*', '_' and '~' in line, and those of them that may
// close emphasis. goldmark's delimiter processing scans back over every run for each closer
// that finds no opener, so closers × runs bounds its work. The test is looser than
// CommonMark's flanking rules (anything not ASCII counts as punctuation), so it never
// counts fewer closers than goldmark finds.
func delimiterRuns(line string) (runs, closers int) {
	space := func(i int) bool { return i < 0 || i >= len(line) || strings.IndexByte(" \t\r\n\f\v", line[i]) >= 0 }
	alnum := func(i int) bool {
		if i < 0 || i >= len(line) {
			return false
		}
		c := line[i]
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	for i := 0; i < len(line); {
		c := line[i]
		if c != '*' && c != '_' && c != '~' {
			i++
			continue
		}
		j := i
		for j < len(line) && line[j] == c {
			j++
		}
		runs++
		if !space(i-1) && !(c == '_' && alnum(i-1) && alnum(j)) {
			closers++
		}
		i = j
	}
	return runs, closers
}

// stripContainers returns line without its leading block quote and list markers, and how
// many there were.
func stripContainers(line string) (string, int) {
	i, depth := 0, 0
	spaceAt := func(j int) bool { return j >= len(line) || strings.IndexByte(" \t\r\n", line[j]) >= 0 }
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i >= len(line) {
			return "", depth
		}
		switch c := line[i]; {
		case c == '>':
			depth, i = depth+1, i+1
			continue
		case (c == '-' || c == '*' || c == '+') && spaceAt(i+1):
			depth, i = depth+1, i+1
			continue
		case '0' <= c && c <= '9':
			j := i
			for j < len(line) && j-i < 9 && '0' <= line[j] && line[j] <= '9' {
				j++
			}
			if j < len(line) && (line[j] == '.' || line[j] == ')') && spaceAt(j+1) {
				depth, i = depth+1, j+1
				continue
			}
		}
		return line[i:], depth
	}
}

// delimiterRowColumns returns how many columns s has if it may be a table's delimiter row
// ("|:--|--:|"), or 0.
func delimiterRowColumns(s string) int {
	s = strings.TrimRight(s, "\r\n")
	if !strings.Contains(s, "-") || !strings.Contains(s, "|") || strings.Trim(s, "|:- \t") != "" {
		return 0
	}
	return strings.Count(s, "|") + 1
}

// The parser, the policy and the lexer table are built once, on first use, and only read
// afterwards: building them costs more than rendering a message.
var (
	markdownParser = sync.OnceValue(func() goldmark.Markdown {
		return goldmark.New(
			goldmark.WithExtensions(
				extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
				extension.Strikethrough,
				extension.NewLinkify(extension.WithLinkifyAllowedProtocols([]string{"http:", "https:"})),
				extension.TaskList,
			),
			// No html.WithUnsafe: raw HTML is omitted. Priority 100 puts these renderers
			// above the defaults (1000) and the task list's (500).
			goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(nodeRenderer{}, 100))),
		)
	})
	markdownPolicy = sync.OnceValue(newMarkdownPolicy)
	codeFormatter  = sync.OnceValue(func() *chromahtml.Formatter {
		return chromahtml.New(chromahtml.WithClasses(true), chromahtml.ClassPrefix(classPrefix))
	})
	// plainStyle is the style the formatter is given: with classes, a style only decides
	// the CSS that static/syntax.css holds, so none is needed at run time, and chroma's
	// styles package (1.4 MiB at start-up) is linked only into the test that writes it.
	plainStyle = sync.OnceValue(func() *chroma.Style { return chroma.MustNewStyle("plain", chroma.StyleEntries{}) })
)

var (
	dataImageURL = regexp.MustCompile(`^data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+={0,2}$`)
	// sameOriginSrc is what an img src may be: a rooted path (not "//host" nor "/\host",
	// which browsers read as another host) or a raster data:image URL.
	sameOriginSrc = regexp.MustCompile(`^(?:/(?:[^/\\]|$)|data:image/(?:png|jpeg|gif|webp);base64,)`)
	chromaClasses = regexp.MustCompile(`^` + classPrefix + `[a-z0-9]+(?: ` + classPrefix + `[a-z0-9]+)*$`)
)

// newMarkdownPolicy is built up from nothing rather than cut down from UGCPolicy: the list
// is exactly what the goldmark and chroma renderers above emit, so whatever else appears
// (an element UGCPolicy allows, or one a future bluemonday adds) is dropped. Notably
// absent: style, srcset, id and name (DOM clobbering of the app's htmx targets), input and
// every other form control, and all embedding elements.
func newMarkdownPolicy() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote",
		"ul", "ol", "li", "em", "strong", "del", "code", "pre",
		"table", "thead", "tbody", "tr", "th", "td")
	p.AllowAttrs("start").Matching(bluemonday.Integer).OnElements("ol")
	p.AllowAttrs("align").Matching(regexp.MustCompile(`^(?:left|center|right)$`)).OnElements("th", "td")
	p.AllowAttrs("class").Matching(chromaClasses).OnElements("pre", "span")
	p.AllowAttrs("href", "title").OnElements("a")
	p.AllowAttrs("rel").Matching(regexp.MustCompile(`^` + relExternal + `$`)).OnElements("a")
	p.AllowAttrs("src").Matching(sameOriginSrc).OnElements("img")
	p.AllowAttrs("alt", "title").OnElements("img")
	p.AllowAttrs("loading").Matching(regexp.MustCompile(`^lazy$`)).OnElements("img")
	p.AllowURLSchemes("http", "https", "mailto")
	p.AllowURLSchemeWithCustomPolicy("data", func(u *url.URL) bool { return dataImageURL.MatchString(u.String()) })
	p.AllowRelativeURLs(true)
	p.RequireParseableURLs(true)
	p.RequireNoFollowOnFullyQualifiedLinks(true)
	p.RequireNoReferrerOnFullyQualifiedLinks(true)
	return p
}

// linkKind is what a link or image destination turned out to be.
type linkKind int

const (
	linkNone      linkKind = iota // not a link: keep its text
	linkExternal                  // http, https or mailto: a navigation off the origin
	linkLocal                     // a workspace file, on the workspace route
	linkDataImage                 // a raster data:image URL: an image may show it, a link may not
)

// linkRewriter rewrites a document's links and images in place, before rendering.
type linkRewriter struct {
	dir      string // cleaned WorkspaceDir, or "" when absolute paths are never local
	base     string // WorkspaceURL ending in "/", or "" when nothing is local
	rawQuery string // WorkspaceRawQuery
	docDir   string // cleaned DocDir; "." is the workspace root
	projDir  string // cleaned ProjectDir, or "" when there is no project
	projBase string // ProjectURL ending in "/", or "" when there is no project
}

func newLinkRewriter(o MarkdownOptions) *linkRewriter {
	rw := &linkRewriter{docDir: path.Clean("/" + o.DocDir)[1:], rawQuery: o.WorkspaceRawQuery}
	if rw.docDir == "" {
		rw.docDir = "."
	}
	if strings.HasPrefix(o.WorkspaceDir, "/") {
		rw.dir = path.Clean(o.WorkspaceDir)
	}
	rw.base = routeBase(o.WorkspaceURL)
	if strings.HasPrefix(o.ProjectDir, "/") {
		if rw.projBase = routeBase(o.ProjectURL); rw.projBase != "" {
			rw.projDir = path.Clean(o.ProjectDir)
		}
	}
	return rw
}

// routeBase returns b ending in "/" when it is a rooted path of this origin ("/…", not
// "//…"), else "".
func routeBase(b string) string {
	if strings.HasPrefix(b, "/") && !strings.HasPrefix(b, "//") && !strings.HasPrefix(b, `/\`) {
		return strings.TrimSuffix(b, "/") + "/"
	}
	return ""
}

func (rw *linkRewriter) rewrite(doc ast.Node, source []byte) {
	var nodes []ast.Node // rewritten after the walk, which a replaced node would derail
	var refs []ast.Node  // code spans and runs of text that may hold path:line references
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.(type) {
		case *ast.Link, *ast.Image, *ast.AutoLink:
			nodes = append(nodes, n)
		case *ast.CodeSpan:
			refs = append(refs, n)
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			if prev, ok := n.PreviousSibling().(*ast.Text); !ok || prev == nil {
				refs = append(refs, n) // the first of a run of text
			}
		}
		return ast.WalkContinue, nil
	})
	if rw.projBase != "" {
		for _, n := range refs {
			if insideLink(n) || insideImage(n) {
				continue
			}
			if c, ok := n.(*ast.CodeSpan); ok {
				rw.codeRef(c, source)
			} else {
				rw.textRefs(n.(*ast.Text), source)
			}
		}
	}
	for _, n := range nodes { // outer before inner, so an image knows whether its link survived
		switch n := n.(type) {
		case *ast.Link:
			kind, u := rw.classify(string(resolveRefs(n.Destination)))
			if (kind != linkExternal && kind != linkLocal) || insideLink(n) {
				unwrap(n)
				continue
			}
			n.Destination, n.Title = []byte(u), resolveRefs(n.Title)
			if kind == linkExternal {
				n.SetAttributeString("rel", relExternal)
			}
		case *ast.Image:
			dest := resolveRefs(n.Destination)
			kind, u := rw.classify(string(dest))
			switch {
			case kind == linkLocal || kind == linkDataImage:
				if kind == linkLocal && rw.rawQuery != "" {
					p, frag, ok := strings.Cut(u, "#")
					if u = p + "?" + rw.rawQuery; ok {
						u += "#" + frag
					}
				}
				n.Destination, n.Title = []byte(u), resolveRefs(n.Title)
			case kind == linkExternal && !insideLink(n):
				l := ast.NewLink()
				l.Destination, l.Title = []byte(u), resolveRefs(n.Title)
				l.SetAttributeString("rel", relExternal)
				moveChildren(l, n)
				if !l.HasChildren() {
					l.AppendChild(l, rawText(u))
				}
				n.Parent().ReplaceChild(n.Parent(), n, l)
			default: // its alt text, or where it pointed
				if !n.HasChildren() {
					n.AppendChild(n, rawText(string(dest)))
				}
				unwrap(n)
			}
		case *ast.AutoLink:
			dest, label := n.URL(source), n.Label(source)
			if n.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(dest), []byte("mailto:")) {
				dest = append([]byte("mailto:"), dest...)
			}
			var repl ast.Node = rawText(string(label))
			if kind, u := rw.classify(string(dest)); (kind == linkExternal || kind == linkLocal) && !insideLink(n) {
				l := ast.NewLink()
				l.Destination = []byte(u)
				if kind == linkExternal {
					l.SetAttributeString("rel", relExternal)
				}
				l.AppendChild(l, repl)
				repl = l
			}
			n.Parent().ReplaceChild(n.Parent(), n, repl)
		}
	}
}

// textRef finds `path:line` references in prose: a relative path with a file extension
// (handlers/api.go, ./main.go, README.md) then :LINE or :LINE:COL, standing on its own.
var textRef = regexp.MustCompile(`(?:^|[\s(\[{<"'])((?:\.{1,2}/)?[A-Za-z0-9_][A-Za-z0-9_.+@-]*(?:/[A-Za-z0-9_.+@-]+)*\.[A-Za-z0-9]{1,12}:[1-9][0-9]{0,8}(?::[0-9]{1,9})?)(?:$|[\s)\]},;:!?>"'.])`)

// codeRef links a code span that is a `path:line` reference and nothing else to the file
// in the project viewer.
func (rw *linkRewriter) codeRef(c *ast.CodeSpan, source []byte) {
	var b strings.Builder
	for t := c.FirstChild(); t != nil; t = t.NextSibling() {
		switch t := t.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(source))
		case *ast.String:
			b.Write(t.Value)
		}
	}
	m := textRef.FindStringSubmatch(b.String())
	if m == nil || m[1] != b.String() {
		return
	}
	kind, u := rw.local(m[1])
	if kind != linkLocal {
		return
	}
	l := ast.NewLink()
	l.Destination = []byte(u)
	c.Parent().ReplaceChild(c.Parent(), c, l)
	l.AppendChild(l, c)
}

// textRefs links the `path:line` references in the run of text nodes that starts at first
// (consecutive siblings, as goldmark splits text at delimiters) to the files in the
// project viewer. The run is rebuilt from the source only when its segments are
// contiguous; line breaks stay on the last node.
func (rw *linkRewriter) textRefs(first *ast.Text, source []byte) {
	run := []*ast.Text{first}
	for n := first.NextSibling(); n != nil; n = n.NextSibling() {
		t, ok := n.(*ast.Text)
		if !ok || t.Segment.Start != run[len(run)-1].Segment.Stop || run[len(run)-1].SoftLineBreak() || run[len(run)-1].HardLineBreak() {
			break
		}
		run = append(run, t)
	}
	for _, t := range run {
		if t.IsRaw() {
			return
		}
	}
	start, stop := first.Segment.Start, run[len(run)-1].Segment.Stop
	txt := string(source[start:stop])
	ms := textRef.FindAllStringSubmatchIndex(txt, -1)
	type ref struct {
		from, to int
		url      string
	}
	var found []ref
	for _, m := range ms {
		if kind, u := rw.local(txt[m[2]:m[3]]); kind == linkLocal {
			found = append(found, ref{start + m[2], start + m[3], u})
		}
	}
	if len(found) == 0 {
		return
	}
	last := run[len(run)-1]
	parent, at := first.Parent(), ast.Node(first)
	add := func(n ast.Node) { parent.InsertBefore(parent, at, n) }
	pos := start
	for _, r := range found {
		if r.from > pos {
			add(ast.NewTextSegment(text.NewSegment(pos, r.from)))
		}
		l := ast.NewLink()
		l.Destination = []byte(r.url)
		l.AppendChild(l, ast.NewTextSegment(text.NewSegment(r.from, r.to)))
		add(l)
		pos = r.to
	}
	tail := ast.NewTextSegment(text.NewSegment(pos, stop))
	tail.SetSoftLineBreak(last.SoftLineBreak())
	tail.SetHardLineBreak(last.HardLineBreak())
	add(tail)
	for _, t := range run {
		parent.RemoveChild(parent, t)
	}
}

// classify decides what dest (entity references already resolved) is and returns the URL
// to emit for it. It reads dest as a browser would: C0 controls and spaces trimmed, tabs
// and newlines removed anywhere, so "java\tscript:" is "javascript:".
func (rw *linkRewriter) classify(dest string) (linkKind, string) {
	s := strings.TrimFunc(dest, func(r rune) bool { return r <= ' ' })
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, s)
	}
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return linkNone, ""
	}
	if isSlash(s[0]) && len(s) > 1 && isSlash(s[1]) { // another host, "//host/…"
		if s[1] == '\\' || s[0] == '\\' {
			return linkNone, ""
		}
		return webURL("https:" + s)
	}
	i := strings.IndexAny(s, ":/\\?#")
	if i < 0 || s[i] != ':' {
		return rw.local(s)
	}
	scheme := strings.ToLower(s[:i])
	if rw.projBase != "" && !knownScheme[scheme] && lineSuffix.MatchString(s[i:]) {
		return rw.local(s) // a file name and a line: main.go:42
	}
	if !isScheme(scheme) {
		return linkNone, "" // a colon in the first segment that is no scheme: ambiguous
	}
	switch scheme {
	case "http", "https":
		return webURL(s)
	case "mailto":
		if u, err := url.Parse(s); err == nil && u.Opaque != "" {
			return linkExternal, u.String()
		}
	case "file":
		if u, err := url.Parse(s); err == nil && (u.Host == "" || u.Host == "localhost") && u.Opaque == "" {
			p := u.EscapedPath()
			if u.Fragment != "" {
				p += "#" + u.EscapedFragment()
			}
			return rw.local(p)
		}
	case "data":
		if dataImageURL.MatchString(s) {
			return linkDataImage, s
		}
	}
	return linkNone, ""
}

// local maps a path onto the workspace route or the project's: an absolute path under
// WorkspaceDir or ProjectDir, or a relative one (against the project's root when there is
// a project, else against DocDir), percent-encoded or not, with each segment escaped. A
// query is dropped; a fragment kept. With a project, a `:LINE` (or `:LINE:COL`) suffix
// becomes ?line=LINE#LLINE. A path that climbs out of its root is not a link.
func (rw *linkRewriter) local(s string) (linkKind, string) {
	p, frag, _ := strings.Cut(s, "#")
	p, _, _ = strings.Cut(p, "?")
	if (rw.base == "" && rw.projBase == "") || p == "" { // "#x" and "?x" point into this page, which has no anchors
		return linkNone, ""
	}
	if d, err := url.PathUnescape(p); err == nil {
		p = d
	}
	line := ""
	if rw.projBase != "" {
		p, line = cutLine(p)
	}
	if strings.HasPrefix(p, "/") {
		c := path.Clean(p)
		if rel, ok := under(rw.dir, c); ok && rw.base != "" {
			return rw.link(rw.base, rel, p, frag, line)
		}
		if rel, ok := under(rw.projDir, c); ok {
			return rw.link(rw.projBase, rel, p, frag, line)
		}
		return linkNone, ""
	}
	base, rel := rw.projBase, path.Clean(p)
	if base == "" {
		base, rel = rw.base, path.Join(rw.docDir, p)
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return linkNone, ""
	}
	return rw.link(base, rel, p, frag, line)
}

// under returns c's path relative to root ("." for root itself) when c is root or inside
// it; root "" has nothing under it.
func under(root, c string) (string, bool) {
	switch prefix := strings.TrimSuffix(root, "/") + "/"; {
	case root == "":
		return "", false
	case c == root:
		return ".", true
	case strings.HasPrefix(c, prefix):
		return c[len(prefix):], true
	}
	return "", false
}

// link is the URL of rel (slash-separated, clean) under the route base, for the path p as
// written (a trailing slash names a directory), with the fragment frag or the line line.
func (rw *linkRewriter) link(base, rel, p, frag, line string) (linkKind, string) {
	u := base
	if rel != "." {
		segs := strings.Split(rel, "/")
		for i, s := range segs {
			if strings.HasPrefix(s, ".") {
				// A hidden name (.env, .git/config): the viewers never show one, so it is
				// no link, and an answer cannot dress one up as a file to open.
				return linkNone, ""
			}
			segs[i] = url.PathEscape(s)
		}
		u += strings.Join(segs, "/")
		if strings.HasSuffix(p, "/") {
			u += "/"
		}
	}
	if line != "" {
		u += "?line=" + line
		if frag == "" {
			frag = "L" + line
		}
	}
	if frag != "" {
		if d, err := url.PathUnescape(frag); err == nil {
			frag = d
		}
		u += "#" + (&url.URL{Fragment: frag}).EscapedFragment()
	}
	return linkLocal, u
}

// lineSuffix is the end of a `path:line` reference: ":42" or ":42:7", then perhaps a
// fragment.
var lineSuffix = regexp.MustCompile(`^:[1-9][0-9]{0,8}(?::[0-9]{1,9})?(?:#.*)?$`)

// knownScheme are URL schemes that a `name:42` destination is never read as a file of.
var knownScheme = map[string]bool{"http": true, "https": true, "mailto": true, "file": true, "data": true,
	"javascript": true, "vbscript": true, "tel": true, "ftp": true, "ssh": true}

// cutLine splits a `:LINE` or `:LINE:COL` suffix off p: "a/b.go:42" is "a/b.go", "42".
func cutLine(p string) (string, string) {
	m := pathLine.FindStringSubmatch(p)
	if m == nil {
		return p, ""
	}
	return m[1], m[2]
}

var pathLine = regexp.MustCompile(`^(.*?[^:/]):([1-9][0-9]{0,8})(?::[0-9]{1,9})?$`)

// webURL accepts an http or https URL with a host, as Go serialises it.
func webURL(s string) (linkKind, string) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return linkNone, ""
	}
	return linkExternal, u.String()
}

func isSlash(c byte) bool { return c == '/' || c == '\\' }

// isScheme reports whether s is an RFC 3986 scheme.
func isScheme(s string) bool {
	for i, c := range []byte(s) {
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// resolveRefs applies what CommonMark does to a destination or title: backslash escapes,
// then numeric and named character references.
func resolveRefs(b []byte) []byte {
	return util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(b)))
}

func insideLink(n ast.Node) bool {
	for p := n.Parent(); p != nil; p = p.Parent() {
		if _, ok := p.(*ast.Link); ok {
			return true
		}
	}
	return false
}

func insideImage(n ast.Node) bool {
	for p := n.Parent(); p != nil; p = p.Parent() {
		if _, ok := p.(*ast.Image); ok {
			return true
		}
	}
	return false
}

// unwrap replaces n by its children.
func unwrap(n ast.Node) {
	parent := n.Parent()
	for c := n.FirstChild(); c != nil; c = n.FirstChild() {
		n.RemoveChild(n, c)
		parent.InsertBefore(parent, n, c)
	}
	parent.RemoveChild(parent, n)
}

func moveChildren(dst, src ast.Node) {
	for c := src.FirstChild(); c != nil; c = src.FirstChild() {
		src.RemoveChild(src, c)
		dst.AppendChild(dst, c)
	}
}

// rawText is text rendered HTML-escaped, with no references resolved.
func rawText(s string) *ast.String {
	t := ast.NewString([]byte(s))
	t.SetRaw(true)
	return t
}

// nodeRenderer renders the nodes whose goldmark defaults do not fit: links and images
// (whose destinations the rewriter has already made final), code (chroma), and task
// checkboxes (text, so no form control is ever allowed).
type nodeRenderer struct{}

func (nodeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindLink, renderLink)
	reg.Register(ast.KindImage, renderImage)
	reg.Register(ast.KindAutoLink, renderAutoLink)
	reg.Register(ast.KindFencedCodeBlock, renderCode)
	reg.Register(ast.KindCodeBlock, renderCode)
	reg.Register(extast.KindTaskCheckBox, renderTaskCheckBox)
}

func renderLink(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Link)
	if !entering {
		_, _ = w.WriteString("</a>")
		return ast.WalkContinue, nil
	}
	_, _ = w.WriteString(`<a href="` + html.EscapeString(string(n.Destination)) + `"`)
	if len(n.Title) > 0 {
		_, _ = w.WriteString(` title="` + html.EscapeString(string(n.Title)) + `"`)
	}
	if _, ok := n.AttributeString("rel"); ok {
		_, _ = w.WriteString(` rel="` + relExternal + `"`)
	}
	_ = w.WriteByte('>')
	return ast.WalkContinue, nil
}

func renderImage(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.Image)
	_, _ = w.WriteString(`<img src="` + html.EscapeString(string(n.Destination)) + `" alt="` + html.EscapeString(altText(n, source)) + `"`)
	if len(n.Title) > 0 {
		_, _ = w.WriteString(` title="` + html.EscapeString(string(n.Title)) + `"`)
	}
	_, _ = w.WriteString(` loading="lazy">`)
	return ast.WalkSkipChildren, nil
}

// altText is the plain text of an image's description.
func altText(n ast.Node, source []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(resolveRefs(c.Value(source)))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// renderAutoLink is never reached (the rewriter replaces every autolink); if it were, the
// label would be text.
func renderAutoLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		_, _ = w.WriteString(html.EscapeString(string(node.(*ast.AutoLink).Label(source))))
	}
	return ast.WalkSkipChildren, nil
}

func renderTaskCheckBox(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		box := "☐ "
		if node.(*extast.TaskCheckBox).IsChecked {
			box = "☑ "
		}
		_, _ = w.WriteString(box)
	}
	return ast.WalkContinue, nil
}

func renderCode(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	var code []byte
	lines := node.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		code = append(code, seg.Value(source)...)
	}
	lang := ""
	if f, ok := node.(*ast.FencedCodeBlock); ok && f.Info != nil {
		lang = string(f.Language(source))
	}
	_, _ = w.Write(highlight(lang, string(code)))
	return ast.WalkSkipChildren, nil
}

// highlight returns code as a <pre> with chroma's classes, or plain when lang names no
// lexer, the code is too long, or chroma fails.
func highlight(lang, code string) (out []byte) {
	return highlightWith(lexers.Get(lang), code)
}

// Code is a source file's text, highlighted by the language its name says (plain where
// none is known, or where the text is over the highlighting limit), as the workspace viewer
// shows it. Its text carries no raw control character, as everywhere on a page.
func Code(name, text string) MarkdownHTML {
	return MarkdownHTML{shown(string(highlightWith(lexers.ForFile(name), text)))}
}

// CodeLines is Code with numbered lines, each a link target: line n has the id "Ln" and
// its number links to #Ln, so that a reference such as main.go:42 opens at its line. first
// is the number of the text's first line (a later page of a long file starts further on).
// Text over the highlighting limit, or of no known language, is numbered unhighlighted.
func CodeLines(name, text string, first int) MarkdownHTML {
	first = max(first, 1)
	lexer := lexers.ForFile(name)
	if lexer != nil && len(text) <= maxHighlightBytes {
		if out, ok := highlightLines(lexer, text, first); ok {
			return MarkdownHTML{shown(string(out))}
		}
	}
	var b strings.Builder
	b.WriteString(`<pre class="` + classPrefix + `chroma"><code>`)
	n := first
	for line := range strings.Lines(text) {
		id := "L" + strconv.Itoa(n)
		b.WriteString(`<span class="` + classPrefix + `line"><span class="` + classPrefix + `ln" id="` + id + `"><a class="` + classPrefix + `lnlinks" href="#` + id + `">` + strconv.Itoa(n) +
			`</a></span><span class="` + classPrefix + `cl">` + html.EscapeString(line) + `</span></span>`)
		n++
	}
	b.WriteString("</code></pre>\n")
	return MarkdownHTML{shown(b.String())}
}

// highlightLines is CodeLines through chroma; ok is false when chroma fails.
func highlightLines(lexer chroma.Lexer, code string, first int) (out []byte, ok bool) {
	defer func() {
		if recover() != nil { // chroma's iterators report errors by panicking
			out, ok = nil, false
		}
	}()
	it, err := chroma.Coalesce(lexer).Tokenise(nil, code)
	if err != nil {
		return nil, false
	}
	f := chromahtml.New(chromahtml.WithClasses(true), chromahtml.ClassPrefix(classPrefix), chromahtml.WithLineNumbers(true),
		chromahtml.WithLinkableLineNumbers(true, "L"), chromahtml.BaseLineNumber(first))
	var b bytes.Buffer
	if err := f.Format(&b, plainStyle(), it); err != nil {
		return nil, false
	}
	b.WriteByte('\n')
	return b.Bytes(), true
}

func highlightWith(lexer chroma.Lexer, code string) (out []byte) {
	plain := func() []byte {
		return []byte(`<pre class="` + classPrefix + `chroma"><code>` + html.EscapeString(code) + "</code></pre>\n")
	}
	if lexer == nil || len(code) > maxHighlightBytes {
		return plain()
	}
	defer func() {
		if recover() != nil { // chroma's iterators report errors by panicking
			out = plain()
		}
	}()
	it, err := chroma.Coalesce(lexer).Tokenise(nil, code)
	if err != nil {
		return plain()
	}
	var b bytes.Buffer
	if err := codeFormatter().Format(&b, plainStyle(), it); err != nil {
		return plain()
	}
	b.WriteByte('\n')
	return b.Bytes()
}
