package config

import (
	"strings"

	"github.com/BurntSushi/toml"
)

// lineIndex maps a dotted key, spelled as [toml.Key.String] spells it, to the first line
// that defines it. The decoder does not expose key positions, so this is a cheap scan of
// the text for table headers and "key =" lines: good enough to point at a line, never
// used to decide what a config means. A key it cannot find reports line 0.
type lineIndex map[string]int

func indexLines(src string) lineIndex {
	ix := lineIndex{}
	var table []string
	closer := "" // the delimiter that ends the multi-line string we are in, if any
	for i, line := range strings.Split(src, "\n") {
		n := i + 1
		if closer != "" {
			if strings.Contains(line, closer) {
				closer = ""
			}
			continue
		}
		s := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(s, "["):
			s = strings.TrimLeft(s, "[")
			if key, rest, ok := parseKey(s); ok && strings.HasPrefix(rest, "]") {
				table = key
				ix.add(table, n)
			}
		case s == "" || strings.HasPrefix(s, "#"):
		default:
			key, rest, ok := parseKey(s)
			if !ok || !strings.HasPrefix(rest, "=") {
				continue
			}
			full := append(append([]string(nil), table...), key...)
			for j := len(table) + 1; j <= len(full); j++ {
				ix.add(full[:j], n)
			}
			closer = openMultiline(rest[1:])
		}
	}
	return ix
}

func (ix lineIndex) add(key []string, line int) {
	k := toml.Key(key).String()
	if _, ok := ix[k]; !ok {
		ix[k] = line
	}
}

// line returns the line of key, or of its longest defined prefix, so that a missing
// required key points at its table header.
func (ix lineIndex) line(key []string) int {
	for j := len(key); j > 0; j-- {
		if n, ok := ix[toml.Key(key[:j]).String()]; ok {
			return n
		}
	}
	return 0
}

// parseKey reads a dotted key (bare, "basic" or 'literal' segments) from the start of s
// and returns its segments and the rest of s with leading blanks removed.
func parseKey(s string) (key []string, rest string, ok bool) {
	for {
		s = strings.TrimLeft(s, " \t")
		var seg string
		switch {
		case strings.HasPrefix(s, `"`):
			var b strings.Builder
			i := 1
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, "", false
			}
			seg, s = b.String(), s[i+1:]
		case strings.HasPrefix(s, "'"):
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, "", false
			}
			seg, s = s[1:1+end], s[end+2:]
		default:
			i := 0
			for i < len(s) && isBareKeyByte(s[i]) {
				i++
			}
			if i == 0 {
				return nil, "", false
			}
			seg, s = s[:i], s[i:]
		}
		key = append(key, seg)
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return key, s, true
		}
		s = s[1:]
	}
}

func isBareKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// openMultiline reports the delimiter of a multi-line string that value opens and does
// not close on the same line, or "".
func openMultiline(value string) string {
	for _, d := range []string{`"""`, `'''`} {
		if strings.HasPrefix(strings.TrimSpace(value), d) && strings.Count(value, d)%2 == 1 {
			return d
		}
	}
	return ""
}
