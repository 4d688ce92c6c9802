// Package termtext makes untrusted text safe to write to a terminal. Model output, tool
// output, gateway error messages, file names and session titles may carry escape sequences
// that set the window title, write the clipboard (OSC 52) or clear the screen; every write
// myco makes to a terminal passes through [Safe] first. [Width], [Cut] and [ExpandTabs]
// measure such text in the terminal's columns and fit it to them.
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Safe returns s with every C0 and C1 control character except newline and tab, DEL,
// the Unicode bidirectional overrides and isolates, and every byte that is not valid UTF-8
// written out visibly as an escape (`\x1b`, `\u202e`), so that the terminal shows them
// instead of obeying them. Text without such characters is returned as is.
func Safe(s string) string {
	i := unsafeIndex(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeIndex returns the index of the first byte of s that Safe rewrites, or -1.
func unsafeIndex(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if unsafeRune(rune(c)) {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || unsafeRune(r) {
			return i
		}
		i += n
	}
	return -1
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f: // C0 and DEL
		return true
	case r >= 0x80 && r <= 0x9f: // C1, CSI (U+009B) and OSC (U+009D) among them
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi embeddings, overrides, isolates
		return true
	}
	return false
}
