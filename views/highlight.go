package views

import (
	"bytes"
	"html"
	"strconv"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/util"

	"myco.dev/views/lexers"
)

// The formatter and its style are built once, on first use, like the parser.
var (
	codeFormatter = sync.OnceValue(func() *chromahtml.Formatter {
		return chromahtml.New(chromahtml.WithClasses(true), chromahtml.ClassPrefix(classPrefix))
	})
	// plainStyle is the style the formatter is given: with classes, a style only decides
	// the CSS that static/syntax.css holds, so none is needed at run time, and chroma's
	// styles package (1.4 MiB at start-up) is linked only into the test that writes it.
	plainStyle = sync.OnceValue(func() *chroma.Style { return chroma.MustNewStyle("plain", chroma.StyleEntries{}) })
)

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
