package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
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
	resolve := func(what string, m map[string]Auth) (map[string]string, error) {
		out := make(map[string]string, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			a := m[k]
			if a.Source == "" || a.Source == AuthNone {
				continue
			}
			v, err := a.Key(lookupEnv, home)
			if err != nil {
				return nil, fmt.Errorf("mcp server %s: %s %s: %w", s.Name, what, k, err)
			}
			out[k] = v
		}
		return out, nil
	}
	if env, err = resolve("env", s.Env); err != nil {
		return nil, nil, err
	}
	if headers, err = resolve("header", s.Headers); err != nil {
		return nil, nil, err
	}
	return env, headers, nil
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
	Command            *string        `toml:"command"`
	Args               *[]string      `toml:"args"`
	Cwd                *string        `toml:"cwd"`
	Host               *string        `toml:"host"`
	Env                toml.Primitive `toml:"env"`
	URL                *string        `toml:"url"`
	Headers            toml.Primitive `toml:"headers"`
	AllowHTTP          *bool          `toml:"allow_http"`
	StartupTimeoutSecs *int           `toml:"startup_timeout_secs"`
	ToolTimeoutSecs    *int           `toml:"tool_timeout_secs"`
	Enabled            *bool          `toml:"enabled"`
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
	d.seconds(&s.StartupTimeout, raw.StartupTimeoutSecs, at("startup_timeout_secs"))
	d.seconds(&s.ToolTimeout, raw.ToolTimeoutSecs, at("tool_timeout_secs"))
	s.Env = d.values(raw.Env, at("env"))
	s.Headers = d.values(raw.Headers, at("headers"))
	return s, true
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

// seconds sets dst from a count of seconds at key, if the file sets it. A value too large
// for a [time.Duration] is reported here and leaves dst alone; anything else is converted
// for the validator to check.
func (d *decoder) seconds(dst *time.Duration, secs *int, key []string) {
	switch {
	case secs == nil:
	case int64(*secs) > maxTimeoutSecs || int64(*secs) < -maxTimeoutSecs:
		d.errs = append(d.errs, d.errorAt(key, fmt.Sprintf("must be from 1 to %d seconds, got %d", maxTimeoutSecs, *secs)))
	default:
		*dst = time.Duration(*secs) * time.Second
	}
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
	if s.StartupTimeout <= 0 {
		v.errorf(at("startup_timeout_secs"), "must be a positive number of seconds, got %d", s.StartupTimeout/time.Second)
	}
	if s.ToolTimeout <= 0 {
		v.errorf(at("tool_timeout_secs"), "must be a positive number of seconds, got %d", s.ToolTimeout/time.Second)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Env)) {
		if !isEnvName(name) {
			v.errorf(at("env", name), "invalid variable name %q: use letters, digits and '_', not starting with a digit", name)
		}
		v.value(at("env", name), s.Env[name])
	}
	for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
		switch {
		case !isHeaderName(name):
			v.errorf(at("headers", name), "invalid header name %q", name)
		case slices.Contains(reservedHeaders, strings.ToLower(name)):
			v.errorf(at("headers", name), "%s is set by the MCP transport itself", name)
		}
		v.value(at("headers", name), s.Headers[name])
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
		}{{"headers", len(s.Headers) > 0}, {"allow_http", s.AllowHTTP}} {
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
