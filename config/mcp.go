package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Defaults of an [MCPServer].
const (
	DefaultMCPStartupTimeout = 10 * time.Second  // startup_timeout_secs
	DefaultMCPToolTimeout    = 120 * time.Second // tool_timeout_secs
)

// MaxMCPServerName is the longest server name: "mcp__NAME__" must leave room for a tool's
// name within the 64 characters providers allow.
const MaxMCPServerName = 32

// MCPServer is one [mcp_servers.NAME] table: an MCP server whose tools the model can call.
// Exactly one of Command (stdio: myco starts the process) and URL (streamable HTTP) is
// set. Credentials in Env and Headers are looked up only when the server is started
// ([MCPServer.Values]).
type MCPServer struct {
	Name string // the table's name: letters, digits, '-' and '_'

	// Command is the program of a stdio server, looked up in PATH when it has no slash;
	// Args are its arguments and Cwd its working directory ("" means myco's; may start
	// with ~/). Host is the SSH host (from ~/.ssh/config) it runs on; "" runs it here.
	Command string
	Args    []string
	Cwd     string
	Host    string
	// Env is the server's environment beyond PATH, HOME and LANG, which it always gets.
	// A value is a string ([AuthInline]) or a source, as for a gateway's auth.
	Env map[string]Auth

	// URL is the endpoint of a streamable HTTP server: https, or http on a loopback
	// address unless AllowHTTP. Headers are sent with every request; a value is a string
	// or a source, as for Env.
	URL       string
	Headers   map[string]Auth
	AllowHTTP bool

	StartupTimeout time.Duration // bounds the start and the tool listing
	ToolTimeout    time.Duration // bounds one tool call; the call is then cancelled
	Enabled        bool          // false keeps the entry but starts nothing
}

// Values looks up the server's environment and headers ([Auth.Key]): lookupEnv and home
// as there. A value whose source is "none" is left out. The error names the server, the
// key and the variable or file that could not supply it.
func (s MCPServer) Values(lookupEnv func(string) (string, bool), home string) (env, headers map[string]string, err error) {
	env, headers, err = serverValues(s.Env, s.Headers, func(a Auth) (string, bool, error) {
		if a.Source == "" || a.Source == AuthNone {
			return "", false, nil
		}
		v, err := a.Key(lookupEnv, home)
		return v, true, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("mcp server %s: %w", s.Name, err)
	}
	return env, headers, nil
}

// serverValues looks up the values of a server's env and headers with value, in key
// order, leaving out those it says are none; an error names the kind ("env" or "header")
// and the key. An empty map gives nil.
func serverValues[V any](env, headers map[string]V, value func(V) (v string, ok bool, err error)) (map[string]string, map[string]string, error) {
	resolve := func(what string, m map[string]V) (map[string]string, error) {
		var out map[string]string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			v, ok, err := value(m[k])
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", what, k, err)
			}
			if ok {
				if out == nil {
					out = make(map[string]string, len(m))
				}
				out[k] = v
			}
		}
		return out, nil
	}
	e, err := resolve("env", env)
	if err != nil {
		return nil, nil, err
	}
	h, err := resolve("header", headers)
	if err != nil {
		return nil, nil, err
	}
	return e, h, nil
}

// MCPServerNames returns the names of the configured MCP servers, enabled or not, sorted.
func (c *Config) MCPServerNames() []string { return slices.Sorted(maps.Keys(c.MCPServers)) }

// CheckMCPHosts reports every MCP server whose host is not one of known (the hosts of
// ~/.ssh/config, which this package does not read) nor "local", as [*Error] values naming
// the file, the line and the key, joined like [Load]'s. cmd/myco calls it once it has
// read the SSH config; nil means every host is known.
func (c *Config) CheckMCPHosts(known []string) error {
	v := &validator{c: c}
	for _, name := range c.MCPServerNames() {
		s := c.MCPServers[name]
		if s.Host == "" || s.Host == "local" || slices.Contains(known, s.Host) {
			continue
		}
		list := "none"
		if len(known) > 0 {
			list = strings.Join(slices.Sorted(slices.Values(known)), ", ")
		}
		v.errorf([]string{"mcp_servers", name, "host"}, "unknown host %q: not a Host of ~/.ssh/config; known hosts: %s", s.Host, list)
	}
	if len(v.errs) > 0 {
		return joinErrors(v.errs)
	}
	return nil
}

// rawMCP is the raw shape of an [mcp_servers.NAME] table.
type rawMCP struct {
	Command   *string        `toml:"command"`
	Args      *[]string      `toml:"args"`
	Cwd       *string        `toml:"cwd"`
	Host      *string        `toml:"host"`
	Env       toml.Primitive `toml:"env"`
	URL       *string        `toml:"url"`
	Headers   toml.Primitive `toml:"headers"`
	AllowHTTP *bool          `toml:"allow_http"`
	Enabled   *bool          `toml:"enabled"`

	// The timeouts are decoded by [decoder.mcpTimeout], from myco's spelling or Codex's.
	StartupTimeoutSecs toml.Primitive `toml:"startup_timeout_secs"`
	StartupTimeoutSec  toml.Primitive `toml:"startup_timeout_sec"` // Codex's
	StartupTimeoutMs   toml.Primitive `toml:"startup_timeout_ms"`  // Codex's older one
	ToolTimeoutSecs    toml.Primitive `toml:"tool_timeout_secs"`
	ToolTimeoutSec     toml.Primitive `toml:"tool_timeout_sec"` // Codex's
	// HTTPHeaders is Codex's spelling of headers: a table of strings, which headers takes too.
	HTTPHeaders toml.Primitive `toml:"http_headers"`
}

// mcpServer decodes one [mcp_servers.NAME] table. The checks that need no other entry
// are done by [validator.mcpServer].
func (d *decoder) mcpServer(name string, p toml.Primitive) (MCPServer, bool) {
	key := []string{"mcp_servers", name}
	at := func(k ...string) []string { return append(slices.Clip(key), k...) }
	var raw rawMCP
	if !d.value(p, &raw, key...) {
		return MCPServer{}, false
	}
	s := MCPServer{
		Name:           name,
		StartupTimeout: DefaultMCPStartupTimeout,
		ToolTimeout:    DefaultMCPToolTimeout,
		Enabled:        true,
	}
	set(&s.Command, raw.Command)
	set(&s.Args, raw.Args)
	set(&s.Cwd, raw.Cwd)
	set(&s.Host, raw.Host)
	set(&s.URL, raw.URL)
	set(&s.AllowHTTP, raw.AllowHTTP)
	set(&s.Enabled, raw.Enabled)
	d.mcpTimeout(&s.StartupTimeout, key, spelling{"startup_timeout_secs", time.Second, raw.StartupTimeoutSecs},
		spelling{"startup_timeout_sec", time.Second, raw.StartupTimeoutSec}, spelling{"startup_timeout_ms", time.Millisecond, raw.StartupTimeoutMs})
	d.mcpTimeout(&s.ToolTimeout, key, spelling{"tool_timeout_secs", time.Second, raw.ToolTimeoutSecs},
		spelling{"tool_timeout_sec", time.Second, raw.ToolTimeoutSec})
	s.Env = d.values(raw.Env, at("env"))
	if d.oneSpelling(key, "headers", "http_headers") == "http_headers" {
		s.Headers = d.values(raw.HTTPHeaders, at("http_headers"))
	} else {
		s.Headers = d.values(raw.Headers, at("headers"))
	}
	return s, true
}

// spelling is one key a setting may be written as, its unit and its raw value.
type spelling struct {
	key  string
	unit time.Duration
	p    toml.Primitive
}

// oneSpelling returns which of keys, the spellings of one setting of table (myco's
// first, then Codex's), the table sets: "" when none. Setting two is a problem, reported
// here with both keys and their lines; the first spelling's value is then used.
func (d *decoder) oneSpelling(table []string, keys ...string) string {
	var set []string
	for _, k := range keys {
		if d.md.IsDefined(append(slices.Clip(table), k)...) {
			set = append(set, k)
		}
	}
	if len(set) > 1 {
		first := append(slices.Clip(table), set[0])
		for _, k := range set[1:] {
			d.broken[toml.Key(append(slices.Clip(table), k)).String()] = true // its keys are not unknown
			d.errs = append(d.errs, d.errorAt(append(slices.Clip(table), k), fmt.Sprintf(
				"set twice: also as %s on line %d, the same setting spelt another way (myco's and Codex's spellings); keep one",
				set[0], d.lines.line(first))))
		}
	}
	if len(set) == 0 {
		return ""
	}
	return set[0]
}

// mcpTimeout sets dst from the timeout of table that the file sets under one of
// spellings: a positive number (an integer or a float) in that spelling's unit. A value
// that is not one is reported here, with the key as written, and leaves dst alone.
func (d *decoder) mcpTimeout(dst *time.Duration, table []string, spellings ...spelling) {
	keys := make([]string, len(spellings))
	for i, sp := range spellings {
		keys[i] = sp.key
	}
	k := d.oneSpelling(table, keys...)
	if k == "" {
		return
	}
	sp := spellings[slices.Index(keys, k)]
	key := append(slices.Clip(table), k)
	unit := "seconds"
	if sp.unit == time.Millisecond {
		unit = "milliseconds"
	}
	var n float64
	switch typ := d.md.Type(key...); typ {
	case "Integer":
		var i int64
		if !d.value(sp.p, &i, key...) {
			return
		}
		n = float64(i)
	case "Float":
		if !d.value(sp.p, &n, key...) {
			return
		}
	default:
		d.errs = append(d.errs, d.errorAt(key, fmt.Sprintf("must be a number of %s, not %s", unit, typeName(strings.ToLower(typ)))))
		return
	}
	limit := float64(maxTimeoutSecs) * float64(time.Second/sp.unit)
	switch got := strconv.FormatFloat(n, 'f', -1, 64); {
	case !(n > 0): // NaN too
		d.errs = append(d.errs, d.errorAt(key, fmt.Sprintf("must be a positive number of %s, got %s", unit, got)))
	case n > limit:
		d.errs = append(d.errs, d.errorAt(key, fmt.Sprintf("must be from 1 to %.0f %s, got %s", limit, unit, got)))
	case time.Duration(n*float64(sp.unit)) < time.Millisecond:
		d.errs = append(d.errs, d.errorAt(key, fmt.Sprintf("must be at least a millisecond; got %s %s", strconv.FormatFloat(n, 'f', -1, 64), unit)))
	default:
		*dst = time.Duration(n * float64(sp.unit))
	}
}

// values decodes a table of environment variables or headers: each value is a string or
// an auth source. It returns nil when key is not defined.
func (d *decoder) values(p toml.Primitive, key []string) map[string]Auth {
	var raw map[string]toml.Primitive
	d.table(p, &raw, key...)
	if raw == nil {
		return nil
	}
	out := make(map[string]Auth, len(raw))
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if a, ok := d.authAt(raw[k], append(slices.Clip(key), k), "value"); ok && a != nil {
			out[k] = *a
		}
	}
	return out
}

// mcpServer checks the MCP server configured as [mcp_servers.NAME].
func (v *validator) mcpServer(name string, s MCPServer) {
	s.Name = name // the table's name is the one that counts
	key := []string{"mcp_servers", name}
	at := func(k ...string) []string { return append(slices.Clip(key), k...) }
	switch {
	case !isMCPName(s.Name):
		v.errorf(key, "invalid server name %q: use letters, digits, '-' and '_'", s.Name)
	case len(s.Name) > MaxMCPServerName:
		v.errorf(key, "server name %q is %d characters long; at most %d, so that mcp__%s__TOOL fits the 64 characters providers allow in a tool name",
			s.Name, len(s.Name), MaxMCPServerName, s.Name)
	}
	// The decoder checks the numbers a file writes; these are for a config built in code.
	if s.StartupTimeout <= 0 {
		v.errorf(at("startup_timeout_secs"), "must be a positive number of seconds, got %s", s.StartupTimeout)
	}
	if s.ToolTimeout <= 0 {
		v.errorf(at("tool_timeout_secs"), "must be a positive number of seconds, got %s", s.ToolTimeout)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Env)) {
		if !isEnvName(name) {
			v.errorf(at("env", name), "invalid variable name %q: use letters, digits and '_', not starting with a digit", name)
		}
		v.value(at("env", name), s.Env[name])
	}
	headers := "headers" // or Codex's spelling, when the file has that one only
	if _, ok := v.c.lines[toml.Key(at("headers")).String()]; !ok {
		if _, ok := v.c.lines[toml.Key(at("http_headers")).String()]; ok {
			headers = "http_headers"
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
		switch {
		case !isHeaderName(name):
			v.errorf(at(headers, name), "invalid header name %q", name)
		case slices.Contains(reservedHeaders, strings.ToLower(name)):
			v.errorf(at(headers, name), "%s is set by the MCP transport itself", name)
		}
		v.value(at(headers, name), s.Headers[name])
	}
	switch {
	case s.Command != "" && s.URL != "":
		v.errorf(key, "set command (a program myco starts) or url (a streamable HTTP endpoint), not both")
	case s.URL != "":
		if msg := checkMCPURL(s.URL, s.AllowHTTP); msg != "" {
			v.errorf(at("url"), "%s", msg)
		}
		for _, k := range []struct {
			name string
			set  bool
		}{{"args", len(s.Args) > 0}, {"cwd", s.Cwd != ""}, {"env", len(s.Env) > 0}, {"host", s.Host != ""}} {
			if k.set {
				v.errorf(at(k.name), "%s is for a command server, which myco starts; a url server is reached over HTTP from here", k.name)
			}
		}
	case strings.TrimSpace(s.Command) != "":
		if s.Cwd != "" && !strings.HasPrefix(s.Cwd, "/") && s.Cwd != "~" && !strings.HasPrefix(s.Cwd, "~/") {
			v.errorf(at("cwd"), "%q is relative; write an absolute path or one that starts with ~/", s.Cwd)
		}
		if s.Host != "" && !isHostName(s.Host) {
			v.errorf(at("host"), "%q is not a host name", s.Host)
		}
		for _, k := range []struct {
			name string
			set  bool
		}{{headers, len(s.Headers) > 0}, {"allow_http", s.AllowHTTP}} {
			if k.set {
				v.errorf(at(k.name), "%s is for a url server; a command server takes env", k.name)
			}
		}
	default:
		v.errorf(key, `no server: set command (a program myco starts, e.g. command = "github-mcp-server") or url (a streamable HTTP endpoint), and not to ""`)
	}
}

// value checks one value of env or headers: a string, or a source as for auth.
func (v *validator) value(key []string, a Auth) {
	if a.Source == AuthInline {
		if strings.ContainsAny(a.Value, "\x00\r\n") {
			v.errorf(key, "must not contain a NUL or a line break")
		}
		return // an empty string is a value like any other
	}
	v.auth(key, a)
}

// checkMCPURL returns why s cannot be an MCP server's url, or "".
func checkMCPURL(s string, allowHTTP bool) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q is not an http or https URL", s)
	}
	if u.User != nil {
		return "must not hold a user or password; send a credential in headers, e.g. headers = { Authorization = { source = \"file\", path = \"~/.config/token\" } }"
	}
	if u.Scheme == "http" && !allowHTTP && !isLoopbackHost(u.Hostname()) {
		return fmt.Sprintf("%q is plain http to a host that is not loopback: use https, or set allow_http = true to send requests (and their headers) unencrypted", s)
	}
	return ""
}

// isLoopbackHost reports whether host (without a port) names this machine's loopback
// interface: "localhost" or a loopback IP address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// reservedHeaders are the headers the streamable HTTP transport sets, lower-cased.
var reservedHeaders = []string{"accept", "content-type", "content-length", "host", "mcp-session-id", "mcp-protocol-version", "last-event-id"}

func isMCPName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isBareKeyByte(s[i]) {
			return false
		}
	}
	return true
}

// isHeaderName reports whether s is an HTTP header name (an RFC 9110 token).
func isHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// isHostName reports whether s could be a Host alias of ~/.ssh/config: no blanks, no
// patterns, not an option.
func isHostName(s string) bool {
	return s != "" && !strings.HasPrefix(s, "-") && !strings.ContainsAny(s, " \t\r\n*?!,\x00")
}
