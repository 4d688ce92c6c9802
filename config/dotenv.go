package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// MaxDotEnvBytes bounds the .env file [LoadDotEnv] reads; a larger file is ignored.
const MaxDotEnvBytes = 1 << 20

// Env is the environment credentials are looked up in ([Auth.Key]): the process
// environment first, then the variables a .env file supplied ([LoadDotEnv]). The .env
// values live only here, never in the process environment, so no tool process and no
// library myco uses sees them. The zero Env is empty. Safe for concurrent use.
type Env struct {
	process func(string) (string, bool)
	dotenv  map[string]string
}

// NewEnv returns the Env of the process environment alone; lookup stands in for
// os.LookupEnv, and nil means an empty environment.
func NewEnv(lookup func(string) (string, bool)) Env { return Env{process: lookup} }

// Lookup returns the variable name from the process environment when it is set there,
// even to "", and otherwise from the .env file.
func (e Env) Lookup(name string) (string, bool) {
	if e.process != nil {
		if v, ok := e.process(name); ok {
			return v, true
		}
	}
	v, ok := e.dotenv[name]
	return v, ok
}

// LoadDotEnv reads the .env file at path for the credentials of c and returns the [Env]
// to look them up in: lookup (which stands in for os.LookupEnv) first, then the file.
// A missing file is not an error, and nothing is ever set in the process environment.
//
// The file may supply only the variables that an auth = { source = "env", var_name = … }
// of c names ([Config.CredentialVars]), for any gateway or model. A .env belongs to the
// working directory, often a repository someone else wrote, so it must not reach what
// shapes myco and the processes it starts (MYCO_HOME, MYCO_CONFIG, HTTPS_PROXY, PATH,
// LD_PRELOAD, …): every other variable is left out with a [Warning] naming the file,
// the line and the variable. So is the whole file, with one warning, when it is not a
// regular file, is larger than [MaxDotEnvBytes], or another user could have written it
// (its owner is neither this user nor root, or group or others may write to it).
//
// The format is one KEY=VALUE per line, optionally prefixed by "export ". Blank lines and
// lines starting with # are ignored. A value is unquoted (trimmed; " #" starts a comment),
// 'single-quoted' (literal) or "double-quoted" (with the escapes \n \t \r \" \\ \$).
// There is no ${VAR} substitution and no multi-line value; the first definition of a
// variable wins. A malformed line is an [*Error] naming the file and line, and then the
// file supplies nothing.
func LoadDotEnv(path string, c *Config, lookup func(string) (string, bool)) (Env, []Warning, error) {
	env := NewEnv(lookup)
	src, skip, err := readDotEnv(path, os.Getuid())
	switch {
	case err != nil:
		return env, nil, err
	case skip != nil:
		return env, []Warning{*skip}, nil
	}
	vars, err := parseDotEnv(path, string(src))
	if err != nil {
		return env, nil, err
	}
	allowed := map[string]bool{}
	if c != nil {
		for _, name := range c.CredentialVars() {
			allowed[name] = true
		}
	}
	var warnings []Warning
	for _, v := range vars {
		if !allowed[v.key] {
			warnings = append(warnings, Warning{File: path, Line: v.line, Key: v.key, Msg: ignoredMsg(c)})
			continue
		}
		if _, seen := env.dotenv[v.key]; seen {
			continue
		}
		if env.dotenv == nil {
			env.dotenv = map[string]string{}
		}
		env.dotenv[v.key] = v.value
	}
	return env, warnings, nil
}

func ignoredMsg(c *Config) string {
	msg := "ignored: a .env may set only the variables the config's auth entries name"
	if c != nil {
		if names := c.CredentialVars(); len(names) > 0 {
			msg += " (" + strings.Join(names, ", ") + ")"
		}
	}
	return msg + "; set it in the environment that starts myco instead"
}

// readDotEnv returns the contents of the .env file at path, nil for a missing file, or a
// warning that says why the whole file is ignored. The file is opened without blocking
// and checked on the open descriptor, so a FIFO or a device (a symlink to /dev/zero in
// a repository) cannot stall or exhaust startup.
func readDotEnv(path string, uid int) ([]byte, *Warning, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("load .env: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("load .env: %w", err)
	}
	skip := func(msg string) *Warning { return &Warning{File: path, Msg: "ignored: " + msg} }
	switch {
	case !info.Mode().IsRegular():
		return nil, skip("not a regular file (" + info.Mode().String() + ")"), nil
	case info.Size() > MaxDotEnvBytes:
		return nil, skip(fmt.Sprintf("larger than %d bytes", MaxDotEnvBytes)), nil
	}
	if why := untrusted(info, uid); why != "" {
		return nil, skip(fmt.Sprintf("another user could have written it %s: %s; %s", describe(info), why, fixFor(path, info, uid, false))), nil
	}
	src, err := io.ReadAll(io.LimitReader(f, MaxDotEnvBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("load .env: %w", err)
	}
	if len(src) > MaxDotEnvBytes {
		return nil, skip(fmt.Sprintf("larger than %d bytes", MaxDotEnvBytes)), nil
	}
	return src, nil, nil
}

type dotEnvVar struct {
	key, value string
	line       int
}

func parseDotEnv(path, src string) ([]dotEnvVar, error) {
	var vars []dotEnvVar
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
		vars = append(vars, dotEnvVar{key: key, value: value, line: i + 1})
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
