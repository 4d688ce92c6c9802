package views

import (
	"strings"

	"myco.dev/internal/termtext"
)

// shown is untrusted text (a title, a file name, model or tool output, an error) as a page
// shows it: control characters other than newline and tab, the bidirectional embeddings,
// overrides and isolates, and bytes that are not UTF-8 written out as visible escapes
// (`\x1b`, `\u202e`, `\xff`) by [termtext.Safe], as the terminal shows them. A file name
// then cannot pose as another ("rtl\u202etxt.exe" reads as such), and a terminal that
// fetches a page obeys no escape sequence in it. A CRLF line break becomes "\n" first: the
// HTML parser reads it so anyway, and a Windows file or an HTTP header dump should not show
// `\x0d` on every line; a lone CR, which can overwrite a line in a terminal, is escaped.
// Ordinary text, Hebrew and Arabic included, is returned as is. templ escapes the result
// for HTML as usual.
//
// Every template applies it to the untrusted strings it writes, in text and in
// attributes; [Markdown] applies it to its output. Left raw are only values that a form
// sends back and that must come back unchanged: the composer's kept text and the models'
// keys (which come from the config).
func shown(s string) string {
	if strings.Contains(s, "\r\n") {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	return termtext.Safe(s)
}
