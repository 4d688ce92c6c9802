package mcp

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Defaults of a [Server].
const (
	DefaultStartupTimeout = 10 * time.Second
	DefaultToolTimeout    = 120 * time.Second
)

// Server is one MCP server, resolved: no credential source or ~ is left in it (cmd/myco
// builds it from config.MCPServer). Exactly one of Command and URL is set.
type Server struct {
	Name string // letters, digits, '-' and '_'

	// Command is the program of a stdio server: a path, or a name looked up in the PATH
	// the server gets. Args are its arguments, Dir its working directory ("" means the
	// host process's). Env is its environment beyond PATH, HOME and LANG (which Env may
	// override).
	Command string
	Args    []string
	Env     map[string]string
	Dir     string

	// URL is a streamable HTTP endpoint: https, or http on a loopback address unless
	// AllowHTTP. Headers are sent with every request.
	URL       string
	Headers   map[string]string
	AllowHTTP bool

	StartupTimeout time.Duration // bounds the start and the tool listing; default 10 s
	ToolTimeout    time.Duration // bounds one call, which is then cancelled; default 120 s

	// Unavailable, when set, says why the server cannot be started at all (a credential
	// of its env or headers that could not be looked up): [Set.Discover] reports it as
	// the server's failure, with no time to try again, and starts nothing.
	Unavailable string
}

// Transport returns "stdio" or "http".
func (s Server) Transport() string {
	if s.URL != "" {
		return "http"
	}
	return "stdio"
}

// passedEnv are the variables of the host process a stdio server gets without being told.
var passedEnv = []string{"PATH", "HOME", "LANG"}

// check returns s with its defaults applied, or why it cannot be started.
func (s Server) check() (Server, error) {
	if !validServerName(s.Name) {
		return s, fmt.Errorf("mcp: invalid server name %q: use 1 to 32 letters, digits, '-' and '_'", s.Name)
	}
	if s.StartupTimeout <= 0 {
		s.StartupTimeout = DefaultStartupTimeout
	}
	if s.ToolTimeout <= 0 {
		s.ToolTimeout = DefaultToolTimeout
	}
	switch {
	case (s.Command == "") == (s.URL == ""):
		return s, fmt.Errorf("mcp: server %s: set exactly one of Command and URL", s.Name)
	case s.URL != "":
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return s, fmt.Errorf("mcp: server %s: %q is not an http or https URL without a user", s.Name, s.URL)
		}
		if u.Scheme == "http" && !s.AllowHTTP && !loopback(u.Hostname()) {
			return s, fmt.Errorf("mcp: server %s: %q is plain http to a host that is not loopback, and AllowHTTP is not set", s.Name, s.URL)
		}
	}
	return s, nil
}

func validServerName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range []byte(s) {
		if !validNameByte(c) {
			return false
		}
	}
	return true
}

// loopback reports whether host (without a port) names the loopback interface.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// environ returns the environment of the stdio server s: PATH, HOME and LANG as lookupEnv
// has them, then s.Env, sorted.
func (s Server) environ(lookupEnv func(string) (string, bool)) []string {
	env := map[string]string{}
	for _, k := range passedEnv {
		if v, ok := lookupEnv(k); ok {
			env[k] = v
		}
	}
	maps.Copy(env, s.Env)
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// errNotFound is the cause of a command that is not in the server's PATH.
var errNotFound = errors.New("not found")

// lookPath finds the program of command in the PATH of env, the way a shell would but
// never in the current directory: a command with a slash is taken as it is (relative to
// dir, as exec does).
func lookPath(command string, env []string) (string, error) {
	if strings.Contains(command, "/") {
		return command, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue // "" and relative entries would run what lies in the current directory
		}
		p := filepath.Join(dir, command)
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q is %w in the PATH the server gets (%s)", command, errNotFound, path)
}
