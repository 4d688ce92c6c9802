package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// The MCP servers a project offers: a .mcp.json in a session's directory, in Claude
// Code's format. It comes with the repository, so it is hostile: this file only reads
// and checks it, and says what it offers; nothing in it is started until the person
// approved that directory's file with that content (see [MCPApproval]).

// ProjectMCPFile is the name of the file, in a session's directory, of the MCP servers
// its project offers.
const ProjectMCPFile = ".mcp.json"

// Bounds of a project's file.
const (
	MaxProjectMCPBytes   = 256 << 10
	MaxProjectMCPServers = 32
	// MaxProjectServerName leaves room for the "project-" that the server's tools carry
	// in their names, within [MaxMCPServerName].
	MaxProjectServerName = MaxMCPServerName - len(ProjectServerPrefix)
)

// ProjectServerPrefix begins the name of a project's server in its tools' names
// (mcp__project-NAME__TOOL), so that they are never a configured server's.
const ProjectServerPrefix = "project-"

// ProjectMCP is what a directory's .mcp.json offers.
type ProjectMCP struct {
	Dir  string // the directory, absolute
	File string // Dir/.mcp.json
	// Sum is the SHA-256 of the file's bytes, in hex: what an approval is of. The servers
	// were read from exactly these bytes.
	Sum string
	// Problem, when set, says why nothing in the file can be used: it is not a regular
	// file, too large, not JSON of the format. Servers is then empty.
	Problem string
	Servers []ProjectServer // in name order
}

// ProjectServer is one server of a project's file, as the file writes it: values keep
// their ${VAR}, which are looked up only when the server is started ([ProjectServer.Values]).
type ProjectServer struct {
	Name string // the file's name of it
	// Command, Args and Env make a stdio server, which runs in the project's directory;
	// URL and Headers a streamable HTTP one.
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	// Vars are the variables of myco's environment that its env and headers read, with
	// ${VAR} or ${VAR:-default}, sorted.
	Vars []string
	// Problem, when set, says why myco does not start it, approved or not.
	Problem string
}

// Server is the name of s in its tools' names: project-NAME.
func (s ProjectServer) Server() string { return ProjectServerPrefix + s.Name }

// Transport returns "stdio" or "http".
func (s ProjectServer) Transport() string {
	if s.URL != "" {
		return "http"
	}
	return "stdio"
}

// rawProjectServer is a server of .mcp.json. Claude Code's "type" is "stdio" (the
// default for a command), "http" or "sse".
type rawProjectServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// LoadProjectMCP reads the .mcp.json of dir, if it has one: nil when it has none. Only a
// regular file is read, opened without following a symlink and without blocking, and at
// most [MaxProjectMCPBytes] of it; what cannot be used is said in its Problem fields, never
// as an error, which is kept for the directory that cannot be read. c, when not nil, is
// the profile's config: a server that reads one of its credential variables is refused.
func LoadProjectMCP(dir string, c *Config) (*ProjectMCP, error) {
	p := &ProjectMCP{Dir: dir, File: filepath.Join(dir, ProjectMCPFile)}
	f, err := os.OpenFile(p.File, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, syscall.ELOOP):
		p.Problem = "it is a symbolic link; myco reads only a regular file there, so that the file approved is the project's own"
		return p, nil
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", p.File, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p.File, err)
	}
	if !info.Mode().IsRegular() {
		p.Problem = "it is " + fileKind(info) + ", not a regular file"
		return p, nil
	}
	src, err := io.ReadAll(io.LimitReader(f, MaxProjectMCPBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p.File, err)
	}
	sum := sha256.Sum256(src)
	p.Sum = hex.EncodeToString(sum[:])
	if len(src) > MaxProjectMCPBytes {
		p.Problem = fmt.Sprintf("it is larger than %d KiB", MaxProjectMCPBytes>>10)
		return p, nil
	}
	var top struct {
		Servers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(src, &top); err != nil {
		p.Problem = "it is not JSON of the format {\"mcpServers\": {\"NAME\": {…}}}: " + err.Error()
		return p, nil
	}
	if len(top.Servers) > MaxProjectMCPServers {
		p.Problem = fmt.Sprintf("it offers %d servers; myco takes at most %d from a project", len(top.Servers), MaxProjectMCPServers)
		return p, nil
	}
	var creds []string
	if c != nil {
		creds = c.CredentialVars()
	}
	for _, name := range slices.Sorted(maps.Keys(top.Servers)) {
		p.Servers = append(p.Servers, projectServer(name, top.Servers[name], creds))
	}
	return p, nil
}

// projectServer decodes and checks the server name of a project's file; creds are the
// config's credential variables, which it must not read.
func projectServer(name string, src json.RawMessage, creds []string) ProjectServer {
	s := ProjectServer{Name: name}
	refuse := func(format string, args ...any) ProjectServer {
		if s.Problem == "" {
			s.Problem = fmt.Sprintf(format, args...)
		}
		return s
	}
	switch {
	case !isMCPName(name):
		return refuse("its name is not letters, digits, '-' and '_'")
	case len(name) > MaxProjectServerName:
		return refuse("its name is longer than %d characters, so that mcp__project-NAME__TOOL fits the 64 characters providers allow", MaxProjectServerName)
	}
	var raw rawProjectServer
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return refuse("it does not decode: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	s.Command, s.Args, s.Env, s.URL, s.Headers = raw.Command, raw.Args, raw.Env, raw.URL, raw.Headers
	switch {
	case raw.Type == "sse":
		return refuse(`its type is "sse", the older HTTP transport; myco speaks streamable HTTP ("type": "http")`)
	case raw.Type != "" && raw.Type != "stdio" && raw.Type != "http":
		return refuse("its type %q is not stdio or http", raw.Type)
	case raw.Command != "" && raw.URL != "":
		return refuse("it sets both command and url")
	case strings.TrimSpace(raw.Command) == "" && raw.URL == "":
		return refuse("it sets neither a command nor a url")
	case raw.Type == "http" && raw.URL == "", raw.Type == "stdio" && raw.Command == "":
		return refuse("its type %q does not go with what it sets", raw.Type)
	case raw.URL != "" && (len(raw.Args) > 0 || len(raw.Env) > 0):
		return refuse("args and env are for a command, not a url")
	case raw.Command != "" && len(raw.Headers) > 0:
		return refuse("headers are for a url, not a command")
	}
	for _, v := range append([]string{raw.Command, raw.URL}, raw.Args...) {
		if strings.Contains(v, "${") {
			return refuse("it uses ${…} in its command, args or url; myco reads your variables only into env and headers, where the approval names them")
		}
		if strings.ContainsRune(v, 0) {
			return refuse("its command, args or url hold a NUL")
		}
	}
	if raw.URL != "" {
		if msg := checkMCPURL(raw.URL, false); msg != "" {
			return refuse("its url: %s", msg)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(raw.Env)) {
		if !isEnvName(k) {
			return refuse("env %q is not a variable name", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(raw.Headers)) {
		if !isHeaderName(k) || slices.Contains(reservedHeaders, strings.ToLower(k)) {
			return refuse("header %q cannot be sent", k)
		}
	}
	vars := map[string]bool{}
	for _, values := range []struct {
		what string
		m    map[string]string
	}{{"env", raw.Env}, {"header", raw.Headers}} {
		for _, k := range slices.Sorted(maps.Keys(values.m)) {
			if strings.ContainsAny(values.m[k], "\x00\r\n") {
				return refuse("%s %s holds a NUL or a line break", values.what, k)
			}
			names, err := expandNames(values.m[k])
			if err != nil {
				return refuse("%s %s: %v", values.what, k, err)
			}
			for _, n := range names {
				vars[n] = true
			}
		}
	}
	s.Vars = slices.Sorted(maps.Keys(vars))
	for _, v := range s.Vars {
		switch {
		case strings.HasPrefix(v, "MYCO_"):
			return refuse("it reads %s; MYCO_ variables are myco's own", v)
		case slices.Contains(creds, v):
			return refuse("it reads %s, a credential of your config, which a project's server never gets", v)
		}
	}
	return s
}

// Values returns the server's env and headers with their ${VAR}s looked up by lookupEnv
// (myco's own environment, never a .env). A variable that is not set and has no default
// is an error naming it.
func (s ProjectServer) Values(lookupEnv func(string) (string, bool)) (env, headers map[string]string, err error) {
	return serverValues(s.Env, s.Headers, func(v string) (string, bool, error) {
		v, err := expand(v, lookupEnv)
		return v, true, err
	})
}

// expand replaces each ${VAR} and ${VAR:-default} of s, as Claude Code does, by lookup's
// value (the default when VAR is unset or empty). A $ not followed by { is itself.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", errors.New("a ${ is not closed")
		}
		name, def, hasDef := strings.Cut(s[i+2:i+end], ":-")
		if !isEnvName(name) {
			return "", fmt.Errorf("${%s} does not name a variable", s[i+2:i+end])
		}
		v, ok := lookup(name)
		switch {
		case (!ok || v == "") && hasDef:
			v = def
		case !ok:
			return "", fmt.Errorf("the variable %s is not set", name)
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

// expandNames returns the variables s reads with ${…}.
func expandNames(s string) ([]string, error) {
	var names []string
	_, err := expand(s, func(name string) (string, bool) {
		names = append(names, name)
		return "x", true
	})
	return names, err
}
