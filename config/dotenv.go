package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// LoadDotEnv sets the variables defined in the .env file at path, skipping every
// variable lookup already reports as set (even to ""), so the environment always wins.
// A missing file is not an error. lookup and setenv stand in for os.LookupEnv and
// os.Setenv.
//
// The format is one KEY=VALUE per line, optionally prefixed by "export ". Blank lines and
// lines starting with # are ignored. A value is unquoted (trimmed; " #" starts a comment),
// 'single-quoted' (literal) or "double-quoted" (with the escapes \n \t \r \" \\ \$).
// There is no ${VAR} substitution and no multi-line value. A malformed line is an
// [*Error] naming the file and line, and no variable is set.
func LoadDotEnv(path string, lookup func(string) (string, bool), setenv func(k, v string) error) error {
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load .env: %w", err)
	}
	vars, err := parseDotEnv(path, string(src))
	if err != nil {
		return err
	}
	for _, kv := range vars {
		if _, ok := lookup(kv[0]); ok {
			continue
		}
		if err := setenv(kv[0], kv[1]); err != nil {
			return fmt.Errorf("load .env %s: set %s: %w", path, kv[0], err)
		}
	}
	return nil
}

func parseDotEnv(path, src string) ([][2]string, error) {
	var vars [][2]string
	for i, line := range strings.Split(src, "\n") {
		bad := func(key, format string, args ...any) error {
			return &Error{File: path, Line: i + 1, Key: key, Msg: fmt.Sprintf(format, args...)}
		}
		s := strings.TrimSpace(strings.TrimPrefix(line, "\ufeff"))
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(s, "export "); ok {
			s = strings.TrimSpace(rest)
		}
		key, value, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if !ok {
			return nil, bad("", "want KEY=VALUE")
		}
		if !isEnvName(key) {
			return nil, bad("", "invalid variable name %q: use letters, digits and '_', not starting with a digit", key)
		}
		value = strings.TrimLeft(value, " \t")
		var rest string
		switch {
		case strings.HasPrefix(value, "'"):
			end := strings.IndexByte(value[1:], '\'')
			if end < 0 {
				return nil, bad(key, "unterminated single-quoted value")
			}
			value, rest = value[1:1+end], value[end+2:]
		case strings.HasPrefix(value, `"`):
			v, n, err := unquoteDouble(value)
			if err != "" {
				return nil, bad(key, "%s", err)
			}
			value, rest = v, value[n:]
		default:
			if j := strings.Index(value, " #"); j >= 0 {
				value = value[:j]
			} else if j := strings.Index(value, "\t#"); j >= 0 {
				value = value[:j]
			}
			value = strings.TrimSpace(value)
		}
		if rest = strings.TrimSpace(rest); rest != "" && !strings.HasPrefix(rest, "#") {
			return nil, bad(key, "unexpected text after the closing quote: %q", rest)
		}
		vars = append(vars, [2]string{key, value})
	}
	return vars, nil
}

// unquoteDouble decodes the double-quoted string at the start of s and returns it, the
// number of bytes it took, and a problem, if any.
func unquoteDouble(s string) (string, int, string) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, ""
		case '\\':
			if i+1 == len(s) {
				return "", 0, "unterminated double-quoted value"
			}
			i++
			switch e := s[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '"', '\\', '$', '\'':
				b.WriteByte(e)
			default:
				return "", 0, fmt.Sprintf(`unknown escape \%c in double-quoted value`, e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, "unterminated double-quoted value"
}

func isEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
