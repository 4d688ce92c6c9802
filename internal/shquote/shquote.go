// Package shquote quotes words for a POSIX shell, so that a command myco prints can be
// pasted as it is, and one it runs over ssh reaches the remote's shell as one word. It
// imports only the standard library.
package shquote

import "strings"

// Quote returns s as one word for a POSIX shell: as it is when it holds only characters
// no shell treats specially, else in single quotes (where a single quote inside closes
// them, stands escaped and opens them again).
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Path is [Quote] for a path that may start with "~/": that stays unquoted, so that the
// shell expands it as the word means.
func Path(s string) string {
	if rest, ok := strings.CutPrefix(s, "~/"); ok && rest != "" {
		return "~/" + Quote(rest)
	}
	return Quote(s)
}
