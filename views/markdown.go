package views

import (
	"bytes"
	"context"
	"html"
	"io"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/a-h/templ"
	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
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

// The parser and the policy are built once, on first use, and only read afterwards:
// building them costs more than rendering a message.
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
