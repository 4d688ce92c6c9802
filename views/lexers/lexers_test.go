package lexers

import (
	"strings"
	"testing"

	"github.com/alecthomas/chroma/v2"

	"myco.dev/internal/needs"
)

// TestTable: the languages models write most have lexers, by name and alias in any case;
// a file name is no language. CI runs `make assets` first, so the XML lexers must be there.
func TestTable(t *testing.T) {
	if paths, _ := filesGlob(); len(paths) == 0 {
		needs.Missing(t, "views/lexers/embedded is empty: run `make assets` to copy chroma's lexers")
	}
	for _, name := range []string{"go", "Golang", "python", "py", "bash", "sh", "shell", "console",
		"javascript", "js", "typescript", "ts", "tsx", "json", "yaml", "toml", "rust", "c", "cpp",
		"java", "kotlin", "ruby", "sql", "diff", "dockerfile", "makefile", "css", "html", "xml", "lua"} {
		if Get(name) == nil {
			t.Errorf("no lexer for %q", name)
		}
	}
	if Count() < 300 {
		t.Errorf("%d names and aliases, want chroma's table (over 300)", Count())
	}
	for _, name := range []string{"main.go", "*.go", "nosuch", ""} {
		if Get(name) != nil {
			t.Errorf("Get(%q) found a lexer, want none", name)
		}
	}
	// An XML lexer that embeds another by name finds it in this table: a Go template.
	if l := Get("go-template"); l == nil {
		t.Error("no Go template lexer")
	}
}

func filesGlob() ([]string, error) {
	ents, err := files.ReadDir("embedded")
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".xml") {
			out = append(out, e.Name())
		}
	}
	return out, err
}

// TestGo lexes Go with every kind of token its rules know, and nothing is an error.
func TestGo(t *testing.T) {
	src := "package main\n\nimport \"fmt\"\n\n// main says hello.\nfunc main() {\n" +
		"\t/* block */ var x, y = 0x1F_FF, 1.5e-3i\n\tr := 'é' + '\\n'\n\ts := `raw\nstring` + \"esc\\\"aped\"\n" +
		"\tfor i := range 10 { if x &^= 1; i >= y && !false { go f[T](nil) } }\n\tfmt.Println(len(s), r, 0o17, 0b101, 1_000, iota)\n}\n"
	it, err := Get("go").Tokenise(nil, src)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	seen := map[chroma.TokenType]bool{}
	for tok := it(); tok != chroma.EOF; tok = it() {
		b.WriteString(tok.Value)
		seen[tok.Type] = true
		if tok.Type == chroma.Error {
			t.Errorf("error token %q", tok.Value)
		}
	}
	if b.String() != src {
		t.Errorf("the tokens do not add up to the source:\n%s", b.String())
	}
	for _, tt := range []chroma.TokenType{chroma.KeywordNamespace, chroma.KeywordDeclaration, chroma.Keyword,
		chroma.KeywordConstant, chroma.NameBuiltin, chroma.NameFunction, chroma.CommentSingle,
		chroma.CommentMultiline, chroma.LiteralNumberHex, chroma.LiteralNumberFloat, chroma.LiteralNumberOct,
		chroma.LiteralNumberBin, chroma.LiteralNumberInteger, chroma.LiteralStringChar,
		chroma.LiteralStringBacktick, chroma.LiteralStringDouble, chroma.Operator, chroma.Punctuation} {
		if !seen[tt] {
			t.Errorf("no %v token", tt)
		}
	}
}

func TestForFile(t *testing.T) {
	for _, tt := range []struct{ name, lexer string }{
		{"main.go", "Go"}, {"src/app.py", "Python"}, {"Makefile", "Makefile"}, {"x/y/Dockerfile", "Docker"},
		{"notes.unknownext", ""},
	} {
		l := ForFile(tt.name)
		got := ""
		if l != nil {
			got = l.Config().Name
		}
		if got != tt.lexer {
			t.Errorf("ForFile(%q) = %q, want %q", tt.name, got, tt.lexer)
		}
	}
}
