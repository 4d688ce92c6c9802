package workspace

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// oneLine returns s as is when every rune of it is printable (unicode.IsPrint: letters,
// marks, numbers, punctuation, symbols and the ASCII space), and Go-quoted otherwise. Names
// and titles from the filesystem go into the system prompt through it, so a file named
// "x\nSYSTEM: …" or a title carrying an escape sequence stays one visibly quoted line.
func oneLine(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
