package config

import (
	"strings"
	"unicode/utf8"
)

// The statements of a TOML file's text, for editing it without decoding it: the decoder
// keeps no comments, blank lines or order, which an edit of config.toml must keep. The
// scan is of a file that decodes (the editor checks that first and decodes the result
// again), so it need not report errors; it must only never take a line inside a string or
// a multi-line array for a statement of its own.

// stmtKind is what one statement of a TOML file is.
type stmtKind int

const (
	stmtOther  stmtKind = iota // a blank or comment line
	stmtTable                  // a [table] header
	stmtArray                  // an [[array of tables]] header
	stmtKeyVal                 // key = value, which may span lines
)

// stmt is one statement of a TOML file: its lines, first to last (0-based, inclusive),
// and for a header or a key/value its key: the table's, or the table's followed by the
// dotted key of the value.
type stmt struct {
	kind        stmtKind
	first, last int
	key         []string
}

// scanStmts splits lines, without their line breaks, into statements.
func scanStmts(lines []string) []stmt {
	var out []stmt
	var table []string
	for i := 0; i < len(lines); i++ {
		s := strings.TrimLeft(lines[i], " \t")
		switch {
		case s == "" || strings.HasPrefix(s, "#"):
			out = append(out, stmt{kind: stmtOther, first: i, last: i})
		case strings.HasPrefix(s, "[["):
			key, _, _ := parseKey(s[2:])
			table = key
			out = append(out, stmt{kind: stmtArray, first: i, last: i, key: key})
		case strings.HasPrefix(s, "["):
			key, _, _ := parseKey(s[1:])
			table = key
			out = append(out, stmt{kind: stmtTable, first: i, last: i, key: key})
		default:
			key, rest, ok := parseKey(s)
			if ok && strings.HasPrefix(rest, "=") {
				rest = rest[1:]
			}
			st := stmt{kind: stmtKeyVal, first: i, key: append(append([]string(nil), table...), key...)}
			var v valueScan
			v.line(rest)
			for v.open() && i+1 < len(lines) {
				i++
				v.line(lines[i])
			}
			st.last = i
			out = append(out, st)
		}
	}
	return out
}

// valueScan follows a value across lines: the strings it is in and the brackets and
// braces it has open.
type valueScan struct {
	depth  int
	closer string // the delimiter of the multi-line string it is in, or ""
}

func (v *valueScan) open() bool { return v.depth > 0 || v.closer != "" }

// line scans one line of the value.
func (v *valueScan) line(s string) {
	for i := 0; i < len(s); {
		if v.closer != "" {
			j := strings.Index(s[i:], v.closer)
			if v.closer == `"""` {
				j = closingQuotes(s[i:])
			}
			if j < 0 {
				return
			}
			i += j + 3
			for i < len(s) && s[i] == v.closer[0] { // """" ends with a quote inside
				i++
			}
			v.closer = ""
			continue
		}
		switch c := s[i]; {
		case c == '#':
			return
		case strings.HasPrefix(s[i:], `"""`), strings.HasPrefix(s[i:], `'''`):
			v.closer = s[i : i+3]
			i += 3
		case c == '"':
			i++
			for i < len(s) && s[i] != '"' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case c == '\'':
			if j := strings.IndexByte(s[i+1:], '\''); j >= 0 {
				i += j + 2
			} else {
				i = len(s)
			}
		case c == '[' || c == '{':
			v.depth++
			i++
		case c == ']' || c == '}':
			v.depth--
			i++
		default:
			i++
		}
	}
}

// closingQuotes returns the index of the """ that ends a multi-line basic string in s,
// skipping escaped quotes, or -1.
func closingQuotes(s string) int {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case strings.HasPrefix(s[i:], `"""`):
			return i
		}
	}
	return -1
}

// hasPrefix reports whether key starts with prefix.
func hasPrefix(key, prefix []string) bool {
	if len(key) < len(prefix) {
		return false
	}
	for i := range prefix {
		if key[i] != prefix[i] {
			return false
		}
	}
	return true
}

// tomlString writes s as a TOML basic string. ok is false when s is not UTF-8, which TOML
// cannot hold.
func tomlString(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789ABCDEF"[r>>4])
			b.WriteByte("0123456789ABCDEF"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String(), true
}

// tomlKey writes one segment of a key: bare when it can be, else quoted.
func tomlKey(k string) (string, bool) {
	if k != "" && isMCPName(k) {
		return k, true
	}
	return tomlString(k)
}
