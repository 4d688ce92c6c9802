package views

import (
	"bytes"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

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
