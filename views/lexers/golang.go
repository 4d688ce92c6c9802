package lexers

// The rules read as a table, as chroma's own do.
import . "github.com/alecthomas/chroma/v2"

// rule matches pattern and emits e.
func rule(pattern string, e Emitter) Rule { return Rule{Pattern: pattern, Type: e} }

// golang lexes Go source, after the language specification's lexical elements: comments,
// the keywords, predeclared identifiers, operators and punctuation, and integer, floating,
// imaginary, rune and string literals.
var golang = MustNewLexer(&Config{
	Name:      "Go",
	Aliases:   []string{"go", "golang"},
	Filenames: []string{"*.go"},
	MimeTypes: []string{"text/x-gosrc"},
}, func() Rules {
	return Rules{
		"root": {
			rule(`\s+`, TextWhitespace),
			rule(`//[^\n]*`, CommentSingle),
			rule(`/\*[\s\S]*?\*/`, CommentMultiline),
			rule(`(?:package|import)\b`, KeywordNamespace),
			rule(`(?:var|const|type|func|struct|interface|map|chan)\b`, KeywordDeclaration),
			rule(Words(``, `\b`, "break", "case", "continue", "default", "defer", "else", "fallthrough",
				"for", "go", "goto", "if", "range", "return", "select", "switch"), Keyword),
			rule(`(?:true|false|nil|iota)\b`, KeywordConstant),
			rule(Words(``, `\b`, "any", "bool", "byte", "comparable", "complex64", "complex128", "error",
				"float32", "float64", "int", "int8", "int16", "int32", "int64", "rune", "string",
				"uint", "uint8", "uint16", "uint32", "uint64", "uintptr"), KeywordType),
			rule(Words(``, `\b(?=\s*\()`, "append", "cap", "clear", "close", "complex", "copy", "delete",
				"imag", "len", "make", "max", "min", "new", "panic", "print", "println", "real",
				"recover"), NameBuiltin),
			rule(`0[xX](?:_?[0-9a-fA-F])*(?:\.(?:[0-9a-fA-F](?:_?[0-9a-fA-F])*)?)?(?:[pP][+-]?\d(?:_?\d)*)?i?`, LiteralNumberHex),
			rule(`0[bB](?:_?[01])+i?`, LiteralNumberBin),
			rule(`0[oO]?(?:_?[0-7])+i?\b`, LiteralNumberOct),
			rule(`(?:\d(?:_?\d)*)?\.\d(?:_?\d)*(?:[eE][+-]?\d(?:_?\d)*)?i?|\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?[eE][+-]?\d(?:_?\d)*i?|\d(?:_?\d)*\.i?`, LiteralNumberFloat),
			rule(`\d(?:_?\d)*i?`, LiteralNumberInteger),
			rule(`'(?:\\(?:[abfnrtv\\'"]|x[0-9a-fA-F]{2}|[0-7]{3}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})|[^\\'\n])'`, LiteralStringChar),
			rule("`[^`]*`", LiteralStringBacktick),
			rule(`"(?:\\.|[^\\"\n])*"`, LiteralStringDouble),
			rule(`<<=|>>=|&\^=|\.\.\.|&&|\|\||<-|\+\+|--|==|!=|<=|>=|:=|<<|>>|&\^|[-+*/%&|^]=?|[<>!=~]`, Operator),
			rule(`([\pL_][\pL\pN_]*)(\s*)(\()`, ByGroups(NameFunction, TextWhitespace, Punctuation)),
			rule(`[\pL_][\pL\pN_]*`, NameOther),
			rule(`[()\[\]{}.,;:]`, Punctuation),
			rule(`.`, Error),
		},
	}
})
