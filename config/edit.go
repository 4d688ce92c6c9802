package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"myco.dev/internal/atomicfile"
)

// The edits of `myco mcp add` and `myco mcp remove`. They change the text of config.toml,
// not a decoded copy, so that its comments, its order and everything else in it stay as
// they were: add appends a table, remove takes out the lines of one. Each edit is checked
// by decoding the result: it must load, and mean the config as it was with only that
// server added or removed; otherwise the file is left as it was and the error says why.
// The file is replaced atomically, with its mode.

// AddMCPServer adds s as a [mcp_servers.NAME] table at the end of the config file at path
// (named as for [Load]; a missing file that is not named is created, mode 0600, in a
// directory that must exist). The file must load as it is, and must not configure a
// server of that name. It returns the line of the new table.
func AddMCPServer(path string, named bool, s MCPServer) (line int, err error) {
	if err := checkMCPName(s.Name); err != nil {
		return 0, err
	}
	s = withMCPDefaults(s)
	err = editConfig(path, named, func(c *Config, src []byte) ([]byte, error) {
		if _, ok := c.MCPServers[s.Name]; ok {
			return nil, fmt.Errorf("%s: mcp server %s is already configured; remove it first (myco mcp remove %s), or edit it there",
				at(path, c.lines.line([]string{"mcp_servers", s.Name})), s.Name, s.Name)
		}
		for _, st := range scanStmts(trimBreaks(splitLines(src))) {
			if st.kind == stmtKeyVal && slices.Equal(st.key, []string{"mcp_servers"}) {
				return nil, fmt.Errorf("%s: mcp_servers is written as one inline table (mcp_servers = { … }), to which no [mcp_servers.%s] table can be added; add the server to it by hand, or write each server as a [mcp_servers.NAME] table",
					at(path, st.first+1), s.Name)
			}
		}
		table, err := mcpTable(s)
		if err != nil {
			return nil, err
		}
		nl := "\n"
		if bytes.Contains(src, []byte("\r\n")) {
			nl = "\r\n"
		}
		out := bytes.Clone(src)
		if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
			out = append(out, nl...)
		}
		if len(bytes.TrimSpace(out)) > 0 && !bytes.HasSuffix(out, []byte("\n\n")) && !bytes.HasSuffix(out, []byte("\n\r\n")) {
			out = append(out, nl...)
		}
		line = bytes.Count(out, []byte("\n")) + 1
		return append(out, strings.ReplaceAll(table, "\n", nl)...), nil
	}, func(old, cur *Config) error {
		got, ok := cur.MCPServers[s.Name]
		if !ok || !reflect.DeepEqual(got, s) {
			return fmt.Errorf("the table myco wrote would not configure mcp server %s as asked; edit the file by hand", s.Name)
		}
		return sameBut(old, cur, s.Name)
	})
	if err != nil {
		return 0, err
	}
	return line, nil
}

// RemoveMCPServer removes the [mcp_servers.NAME] table, and its sub-tables such as
// [mcp_servers.NAME.env], from the config file at path (named as for [Load]): the header
// and every line up to its last key, with the comments among them; comments and blank
// lines before the next table stay. The file must load as it is and configure that server
// as a table of its own: a server written another way (inside an inline mcp_servers = { … },
// or as dotted keys) is refused with its line, to be removed by hand.
func RemoveMCPServer(path string, named bool, name string) error {
	return editConfig(path, named, func(c *Config, src []byte) ([]byte, error) {
		if _, ok := c.MCPServers[name]; !ok {
			known := "none is configured"
			if names := c.MCPServerNames(); len(names) > 0 {
				known = "the configured ones are " + strings.Join(names, ", ")
			}
			return nil, fmt.Errorf("%s configures no mcp server %s; %s", path, name, known)
		}
		lines := splitLines(src)
		stmts := scanStmts(trimBreaks(lines))
		prefix := []string{"mcp_servers", name}
		var drop [][2]int // line ranges, inclusive
		for k, st := range stmts {
			switch {
			case st.kind == stmtTable && hasPrefix(st.key, prefix):
				end := len(stmts) - 1
				for j := k + 1; j < len(stmts); j++ {
					if stmts[j].kind == stmtTable || stmts[j].kind == stmtArray {
						end = j - 1
						break
					}
				}
				for end > k && stmts[end].kind == stmtOther {
					end--
				}
				drop = append(drop, [2]int{st.first, stmts[end].last})
			case st.kind == stmtArray && hasPrefix(st.key, prefix),
				st.kind == stmtKeyVal && (hasPrefix(st.key, prefix) || slices.Equal(st.key, prefix[:1])) && !inRanges(drop, st.first):
				return nil, fmt.Errorf("%s: mcp server %s is written in a form myco does not edit, not as a [mcp_servers.%s] table of its own; remove it there by hand",
					at(path, st.first+1), name, name)
			}
		}
		if len(drop) == 0 {
			return nil, fmt.Errorf("%s: mcp server %s is written in a form myco does not edit, not as a [mcp_servers.%s] table of its own; remove it there by hand",
				at(path, c.lines.line(prefix)), name, name)
		}
		// Where a table went, one blank line stays between what was around it, and the
		// file neither begins nor ends with one it did not have.
		for i, r := range drop {
			before, after := r[0]-1, r[1]+1
			switch {
			case after < len(lines) && isBlank(lines[after]) && (before < 0 || isBlank(lines[before]) || inRanges(drop, before)):
				drop[i][1] = after
			case after >= len(lines) && before >= 0 && isBlank(lines[before]) && !inRanges(drop, before):
				drop[i][0] = before
			}
		}
		var kept []string
		for i, l := range lines {
			if !inRanges(drop, i) {
				kept = append(kept, l)
			}
		}
		return []byte(strings.Join(kept, "")), nil
	}, func(old, cur *Config) error {
		if _, ok := cur.MCPServers[name]; ok {
			return fmt.Errorf("mcp server %s is still configured after its table was taken out", name)
		}
		return sameBut(old, cur, name)
	})
}

// editConfig changes the config file at path by edit, which gets the decoded config and
// its bytes and returns the new bytes. The result must load and pass check(old, new);
// then it replaces the file atomically, with the file's mode (a symlink's target is
// written, and stays its target). A file that another process changed meanwhile is not
// overwritten.
func editConfig(path string, named bool, edit func(c *Config, src []byte) ([]byte, error), check func(old, cur *Config) error) error {
	c, src, err := load(path, named)
	if err != nil {
		return fmt.Errorf("myco changes a config that loads, and this one does not; fix it first: %w", err)
	}
	out, err := edit(c, src)
	if err != nil {
		return err
	}
	cur, err := Parse(path, out)
	if err != nil {
		return fmt.Errorf("%s is left as it was: the changed file would not load: %w", path, err)
	}
	if err := check(c, cur); err != nil {
		return fmt.Errorf("%s is left as it was: %w", path, err)
	}
	target, perm := path, os.FileMode(0o600)
	if src != nil {
		if target, err = filepath.EvalSymlinks(path); err != nil {
			return fmt.Errorf("edit %s: %w", path, err)
		}
		info, err := os.Stat(target)
		if err != nil {
			return fmt.Errorf("edit %s: %w", path, err)
		}
		perm = info.Mode().Perm()
	}
	now, _, err := readConfig(path, named)
	switch {
	case err != nil && !(src == nil && errors.Is(err, fs.ErrNotExist)):
		return fmt.Errorf("edit %s: %w", path, err)
	case !bytes.Equal(now, src) || (src == nil) != (now == nil):
		return fmt.Errorf("%s changed while myco edited it, and is left as the other change made it; run the command again", path)
	}
	if err := atomicfile.Write(target, out, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// sameBut reports what differs between old and cur beyond the mcp server name.
func sameBut(old, cur *Config, name string) error {
	a, b := *old, *cur
	a.MCPServers, b.MCPServers = maps.Clone(a.MCPServers), maps.Clone(b.MCPServers)
	delete(a.MCPServers, name)
	delete(b.MCPServers, name)
	a.lines, b.lines, a.Warnings, b.Warnings = nil, nil, nil, nil
	if !reflect.DeepEqual(a, b) {
		return fmt.Errorf("the edit would change more than mcp server %s; edit the file by hand", name)
	}
	return nil
}

// mcpTable writes s as a [mcp_servers.NAME] table, with the keys it sets.
func mcpTable(s MCPServer) (string, error) {
	var b strings.Builder
	var bad error
	str := func(key, v string) string {
		q, ok := tomlString(v)
		if !ok && bad == nil {
			bad = fmt.Errorf("mcp server %s: %s is not UTF-8 text, which config.toml cannot hold", s.Name, key)
		}
		return q
	}
	values := func(key string, m map[string]Auth) string {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			kq, ok := tomlKey(k)
			if !ok && bad == nil {
				bad = fmt.Errorf("mcp server %s: %s %q is not UTF-8 text", s.Name, key, k)
			}
			a := m[k]
			var v string
			switch a.Source {
			case AuthInline:
				v = str(key+" "+k, a.Value)
			case AuthEnv:
				v = `{ source = "env", var_name = ` + str(key+" "+k, a.VarName) + " }"
			case AuthFile:
				v = `{ source = "file", path = ` + str(key+" "+k, a.Path) + " }"
			default:
				v = `{ source = "none" }`
			}
			parts = append(parts, kq+" = "+v)
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	fmt.Fprintf(&b, "[mcp_servers.%s]\n", s.Name)
	for _, kv := range []struct{ key, value string }{
		{"command", s.Command}, {"host", s.Host}, {"cwd", s.Cwd}, {"url", s.URL},
	} {
		if kv.value != "" {
			fmt.Fprintf(&b, "%s = %s\n", kv.key, str(kv.key, kv.value))
		}
	}
	if len(s.Args) > 0 {
		var q []string
		for _, a := range s.Args {
			q = append(q, str("an argument", a))
		}
		fmt.Fprintf(&b, "args = [%s]\n", strings.Join(q, ", "))
	}
	if len(s.Env) > 0 {
		fmt.Fprintf(&b, "env = %s\n", values("env", s.Env))
	}
	if len(s.Headers) > 0 {
		fmt.Fprintf(&b, "headers = %s\n", values("header", s.Headers))
	}
	if s.AllowHTTP {
		b.WriteString("allow_http = true\n")
	}
	if s.StartupTimeout != DefaultMCPStartupTimeout {
		fmt.Fprintf(&b, "startup_timeout_secs = %s\n", seconds(s.StartupTimeout))
	}
	if s.ToolTimeout != DefaultMCPToolTimeout {
		fmt.Fprintf(&b, "tool_timeout_secs = %s\n", seconds(s.ToolTimeout))
	}
	if !s.Enabled {
		b.WriteString("enabled = false\n")
	}
	return b.String(), bad
}

// seconds writes d as a TOML number of seconds: an integer when it is a whole one.
func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10)
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// withMCPDefaults gives s the defaults that a table's decoding gives an unset key.
func withMCPDefaults(s MCPServer) MCPServer {
	if len(s.Args) == 0 {
		s.Args = nil
	}
	if len(s.Env) == 0 {
		s.Env = nil
	}
	if len(s.Headers) == 0 {
		s.Headers = nil
	}
	if s.StartupTimeout == 0 {
		s.StartupTimeout = DefaultMCPStartupTimeout
	}
	if s.ToolTimeout == 0 {
		s.ToolTimeout = DefaultMCPToolTimeout
	}
	return s
}

// checkMCPName says why name cannot name an MCP server, or nil.
func checkMCPName(name string) error {
	switch {
	case !isMCPName(name):
		return fmt.Errorf("invalid mcp server name %q: use letters, digits, '-' and '_'", name)
	case len(name) > MaxMCPServerName:
		return fmt.Errorf("mcp server name %q is %d characters long; at most %d, so that mcp__%s__TOOL fits the 64 characters providers allow in a tool name",
			name, len(name), MaxMCPServerName, name)
	}
	return nil
}

// splitLines splits src into its lines, each with its line break.
func splitLines(src []byte) []string {
	lines := strings.SplitAfter(string(src), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // what follows the last line break is no line
	}
	return lines
}

// trimBreaks returns lines without their line breaks.
func trimBreaks(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(l, "\r\n")
	}
	return out
}

func isBlank(line string) bool { return strings.TrimSpace(line) == "" }

func inRanges(rs [][2]int, i int) bool {
	for _, r := range rs {
		if i >= r[0] && i <= r[1] {
			return true
		}
	}
	return false
}

// at is "FILE:LINE", or FILE when the line is unknown.
func at(file string, line int) string {
	if line <= 0 {
		return file
	}
	return file + ":" + strconv.Itoa(line)
}

// NewMCPServer is the [MCPServer] that `myco mcp add NAME` describes: a command server
// (command, with env as NAME=VALUE or a bare NAME that passes that variable of myco's on as
// a credential) or a --url server (with headers as NAME=VALUE), enabled. Its error says
// which flags do not go together, in the flags' words.
func NewMCPServer(name, host, cwd, url string, command, env, headers []string) (MCPServer, error) {
	s := MCPServer{Name: name, Host: host, Cwd: cwd, URL: url, Enabled: true}
	var err error
	switch {
	case url != "" && command != nil:
		return s, errors.New("a server is a --url or a command after --, not both")
	case url != "" && (host != "" || cwd != "" || len(env) > 0):
		return s, errors.New("--host, --cwd and --env are for a command server, which myco starts; a --url server takes --header")
	case url == "" && len(command) == 0:
		return s, errors.New("give the server's command after --, or its --url")
	case url == "" && len(headers) > 0:
		return s, errors.New("--header is for a --url server; a command server takes --env")
	case url == "":
		s.Command, s.Args = command[0], command[1:]
		s.Env, err = mcpValues("--env", env, true)
	default:
		s.Headers, err = mcpValues("--header", headers, false)
	}
	return s, err
}

// mcpValues turns K=V flags into env or header values: an inline string, or, for env
// (fromEnv), a bare K that passes myco's variable K on as a credential source.
func mcpValues(flag string, kvs []string, fromEnv bool) (map[string]Auth, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]Auth{}
	for _, kv := range kvs {
		k, v, found := strings.Cut(kv, "=")
		a := Auth{Source: AuthInline, Value: v}
		switch {
		case !found && fromEnv:
			a = Auth{Source: AuthEnv, VarName: k}
		case !found:
			return nil, fmt.Errorf("%s %q: write NAME=VALUE", flag, kv)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s %s is given twice", flag, k)
		}
		out[k] = a
	}
	return out, nil
}
