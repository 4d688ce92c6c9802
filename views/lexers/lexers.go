// Package lexers is the syntax highlighter's table of languages, built on first use.
//
// chroma's own lexers package builds its table of some 280 languages when the process
// starts, which cost every myco process (a one-shot prompt, a host daemon on a remote)
// about 7 MiB and 10 ms though only the browser's pages highlight code. So myco does not
// link it: chroma's XML lexer definitions, of the version go.mod names, are in embedded/
// (`make assets` copies them from the module, they are committed, and `make check-assets`
// proves them equal to the module's), and [Get] reads them the first time it is called.
// Go, whose chroma lexer is Go code rather than XML, has its own rules here.
//
// It must not import anything of myco.
package lexers

import (
	"cmp"
	"embed"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
)

// files holds embedded/*.xml and chroma's licence when `make assets` has put them there.
//
//go:embed embedded
var files embed.FS

// markupAliases are the names of markup languages whose chroma lexers are Go code, and
// which the XML lexer reads well enough: tags, attributes, entities and comments.
var markupAliases = []string{"html", "htm", "xhtml", "svg"}

// byFile pairs the file name patterns of each lexer ("*.go", "Makefile") with it.
type fileLexer struct {
	pattern string
	lexer   chroma.Lexer
}

var fileTable = sync.OnceValue(func() []fileLexer {
	var out []fileLexer
	seen := map[chroma.Lexer]bool{}
	for _, l := range table() {
		if seen[l] {
			continue
		}
		seen[l] = true
		for _, p := range l.Config().Filenames {
			out = append(out, fileLexer{p, l})
		}
	}
	// The most specific pattern first: "CMakeLists.txt" before "*.txt".
	slices.SortFunc(out, func(a, b fileLexer) int {
		return cmp.Or(cmp.Compare(strings.Count(a.pattern, "*"), strings.Count(b.pattern, "*")), cmp.Compare(len(b.pattern), len(a.pattern)), strings.Compare(a.pattern, b.pattern))
	})
	return out
})

// ForFile returns the lexer for a file named name (its base name is matched against each
// lexer's file name patterns, such as "*.py" or "Dockerfile"), or nil.
func ForFile(name string) chroma.Lexer {
	base := path.Base(name)
	for _, f := range fileTable() {
		if ok, _ := path.Match(f.pattern, base); ok {
			return f.lexer
		}
	}
	return nil
}

var table = sync.OnceValue(func() map[string]chroma.Lexer {
	reg := chroma.NewLexerRegistry()
	reg.Register(golang)
	paths, _ := fs.Glob(files, "embedded/*.xml")
	for _, p := range paths {
		if l, err := chroma.NewXMLLexer(files, p); err == nil {
			reg.Register(l)
		}
	}
	m := map[string]chroma.Lexer{}
	for _, l := range reg.Lexers {
		cfg := l.Config()
		for _, name := range append([]string{cfg.Name}, cfg.Aliases...) {
			if k := strings.ToLower(name); m[k] == nil {
				m[k] = l
			}
		}
	}
	if xml := m["xml"]; xml != nil {
		for _, k := range markupAliases {
			if m[k] == nil {
				m[k] = xml
			}
		}
	}
	return m
})

// Get returns the lexer whose name or alias is name, in any case, or nil. Only names
// count: a file name or an extension names no language.
func Get(name string) chroma.Lexer {
	return table()[strings.ToLower(name)]
}

// Count is how many names and aliases [Get] knows.
func Count() int { return len(table()) }
