package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// servers is the example, with every key used once.
const servers = `
[mcp_servers.github]              # stdio: myco starts the process
command = "github-mcp-server"
args = ["stdio"]
env = { GITHUB_TOKEN = { source = "env", var_name = "GITHUB_TOKEN" }, LOG_LEVEL = "warn" }
cwd = "/srv/tools"
startup_timeout_secs = 20
tool_timeout_secs = 300
enabled = true

[mcp_servers.docs]                # streamable HTTP
url = "http://127.0.0.1:8931/mcp"
headers = { Authorization = { source = "file", path = "~/.config/docs-token" } }

[mcp_servers.remote-docs]
url = "http://docs.internal/mcp"
allow_http = true
enabled = false

[mcp_servers.db]                  # stdio on an SSH host from ~/.ssh/config
host = "devbox"
command = "postgres-mcp"

[mcp_servers.db.env]
PGDATABASE = "app"
PGPASSWORD.source = "file"
PGPASSWORD.path = "~/.pgpass-app"
`

func TestLoadMCPServers(t *testing.T) {
	c, err := Load(writeConfig(t, servers), true)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := map[string]MCPServer{
		"github": {Name: "github", Command: "github-mcp-server", Args: []string{"stdio"}, Cwd: "/srv/tools",
			Env: map[string]Auth{
				"GITHUB_TOKEN": {Source: AuthEnv, VarName: "GITHUB_TOKEN"},
				"LOG_LEVEL":    {Source: AuthInline, Value: "warn"},
			},
			StartupTimeout: 20 * time.Second, ToolTimeout: 300 * time.Second, Enabled: true},
		"docs": {Name: "docs", URL: "http://127.0.0.1:8931/mcp",
			Headers:        map[string]Auth{"Authorization": {Source: AuthFile, Path: "~/.config/docs-token"}},
			StartupTimeout: DefaultMCPStartupTimeout, ToolTimeout: DefaultMCPToolTimeout, Enabled: true},
		"remote-docs": {Name: "remote-docs", URL: "http://docs.internal/mcp", AllowHTTP: true,
			StartupTimeout: DefaultMCPStartupTimeout, ToolTimeout: DefaultMCPToolTimeout},
		"db": {Name: "db", Host: "devbox", Command: "postgres-mcp",
			Env: map[string]Auth{
				"PGDATABASE": {Source: AuthInline, Value: "app"},
				"PGPASSWORD": {Source: AuthFile, Path: "~/.pgpass-app"},
			},
			StartupTimeout: DefaultMCPStartupTimeout, ToolTimeout: DefaultMCPToolTimeout, Enabled: true},
	}
	for _, name := range c.MCPServerNames() {
		if !reflect.DeepEqual(c.MCPServers[name], want[name]) {
			t.Errorf("Load MCPServers[%s] =\n%#v\nwant\n%#v", name, c.MCPServers[name], want[name])
		}
	}
	if len(c.MCPServers) != len(want) {
		t.Errorf("Load MCPServers = %d servers, want %d", len(c.MCPServers), len(want))
	}
	if got, want := c.MCPServerNames(), []string{"db", "docs", "github", "remote-docs"}; !slices.Equal(got, want) {
		t.Errorf("MCPServerNames() = %q, want %q", got, want)
	}
	if got := c.CredentialVars(); !slices.Equal(got, []string{"GITHUB_TOKEN"}) {
		t.Errorf("CredentialVars() = %q, want the MCP env source GITHUB_TOKEN", got)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("Load warnings = %v, want none", c.Warnings)
	}
}

// A table pasted from Codex's config.toml loads: its spellings of the timeouts (seconds
// as an integer or a float, the older startup_timeout_ms) and of headers mean what myco's
// do.
func TestLoadMCPCodexSpellings(t *testing.T) {
	c, err := Load(writeConfig(t, `
[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
env = { "LOG_LEVEL" = "warn" }
startup_timeout_sec = 20
tool_timeout_sec = 1.5

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
http_headers = { "X-Figma-Region" = "us-east-1" }
startup_timeout_ms = 2500
`), true)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := map[string]MCPServer{
		"context7": {Name: "context7", Command: "npx", Args: []string{"-y", "@upstash/context7-mcp"},
			Env:            map[string]Auth{"LOG_LEVEL": {Source: AuthInline, Value: "warn"}},
			StartupTimeout: 20 * time.Second, ToolTimeout: 1500 * time.Millisecond, Enabled: true},
		"figma": {Name: "figma", URL: "https://mcp.figma.com/mcp",
			Headers:        map[string]Auth{"X-Figma-Region": {Source: AuthInline, Value: "us-east-1"}},
			StartupTimeout: 2500 * time.Millisecond, ToolTimeout: DefaultMCPToolTimeout, Enabled: true},
	}
	if !reflect.DeepEqual(c.MCPServers, want) {
		t.Errorf("Load MCPServers =\n%#v\nwant\n%#v", c.MCPServers, want)
	}
}

// TestLoadMCPErrors pins one or more problems per case, like [TestLoadErrors]: each want
// is "LINE: KEY: message start".
func TestLoadMCPErrors(t *testing.T) {
	const s = "[mcp_servers.s]\ncommand = \"x\"\n" // lines 1-2
	const u = "[mcp_servers.u]\nurl = \"https://h/mcp\"\n"
	for _, tt := range []struct {
		name string
		src  string
		want []string
	}{
		{"unknown key", s + "argv = [\"a\"]\n", []string{"3: mcp_servers.s.argv: unknown key"}},
		{"unknown key in an env source", s + "env = { T = { source = \"env\", var = \"T\" } }\n", []string{
			"3: mcp_servers.s.env.T.var: unknown key",
			"3: mcp_servers.s.env.T.var_name: required",
		}},
		{"both command and url", s + "url = \"https://h\"\n", []string{"1: mcp_servers.s: set command (a program myco starts) or url (a streamable HTTP endpoint), not both"}},
		{"neither", "[mcp_servers.s]\nargs = [\"a\"]\n", []string{"1: mcp_servers.s: no server: set command"}},
		{"empty command", "[mcp_servers.s]\ncommand = \"\"\n", []string{"1: mcp_servers.s: no server: set command"}},
		{"bad name", "[mcp_servers.\"a.b\"]\ncommand = \"x\"\n", []string{`1: mcp_servers."a.b": invalid server name "a.b": use letters, digits, '-' and '_'`}},
		{"name with a space", "[mcp_servers.\"a b\"]\ncommand = \"x\"\n", []string{`1: mcp_servers."a b": invalid server name`}},
		{"long name", "[mcp_servers." + strings.Repeat("n", 33) + "]\ncommand = \"x\"\n", []string{"1: mcp_servers." + strings.Repeat("n", 33) + ": server name"}},
		{"servers not a table", "mcp_servers = 1\n", []string{"1: mcp_servers: must be a table, not an integer"}},
		{"server not a table", "[mcp_servers]\ns = \"x\"\n", []string{"2: mcp_servers.s: must be a table, not a string"}},
		{"args not strings", s + "args = [1]\n", []string{"3: mcp_servers.s.args: must be a string, not an integer"}},
		{"env not a table", s + "env = \"A=B\"\n", []string{"3: mcp_servers.s.env: must be a table, not a string"}},
		{"env value wrong type", s + "env = { A = 1 }\n", []string{"3: mcp_servers.s.env.A: must be the value as a string or a table"}},
		{"env bad name", s + "env = { \"A-B\" = \"x\" }\n", []string{`3: mcp_servers.s.env.A-B: invalid variable name "A-B"`}},
		{"env value with a newline", s + "env = { A = \"x\\ny\" }\n", []string{"3: mcp_servers.s.env.A: must not contain a NUL or a line break"}},
		{"env unknown source", s + "[mcp_servers.s.env]\nT = { source = \"vault\" }\n", []string{`4: mcp_servers.s.env.T.source: unknown auth source "vault"`}},
		{"env inline as a source", s + "[mcp_servers.s.env]\nT = { source = \"inline\" }\n", []string{`4: mcp_servers.s.env.T.source: unknown auth source "inline"; write the value itself as T = "…"`}},
		{"env source without var_name", s + "[mcp_servers.s.env]\nT = { source = \"env\" }\n", []string{"4: mcp_servers.s.env.T.var_name: required"}},
		{"env source MYCO_", s + "[mcp_servers.s.env]\nT = { source = \"env\", var_name = \"MYCO_HOME\" }\n", []string{`4: mcp_servers.s.env.T.var_name: "MYCO_HOME": MYCO_ variables`}},
		{"env file without path", s + "[mcp_servers.s.env]\nT.source = \"file\"\n", []string{"4: mcp_servers.s.env.T.path: required"}},
		{"relative cwd", s + "cwd = \"tools\"\n", []string{`3: mcp_servers.s.cwd: "tools" is relative`}},
		{"zero startup timeout", s + "startup_timeout_secs = 0\n", []string{"3: mcp_servers.s.startup_timeout_secs: must be a positive number of seconds, got 0"}},
		{"negative tool timeout", s + "tool_timeout_secs = -1\n", []string{"3: mcp_servers.s.tool_timeout_secs: must be a positive number of seconds, got -1"}},
		{"timeout overflows", s + "tool_timeout_secs = 9_300_000_000\n", []string{"3: mcp_servers.s.tool_timeout_secs: must be from 1 to 9223372036 seconds"}},
		{"timeout wrong type", s + "tool_timeout_secs = \"60\"\n", []string{"3: mcp_servers.s.tool_timeout_secs: must be a number of seconds, not a string"}},
		{"negative float timeout", s + "startup_timeout_sec = -0.5\n", []string{"3: mcp_servers.s.startup_timeout_sec: must be a positive number of seconds, got -0.5"}},
		{"zero ms timeout", s + "startup_timeout_ms = 0\n", []string{"3: mcp_servers.s.startup_timeout_ms: must be a positive number of milliseconds"}},
		{"both spellings of a timeout", s + "startup_timeout_secs = 5\nstartup_timeout_sec = 6\n", []string{
			"4: mcp_servers.s.startup_timeout_sec: set twice: also as startup_timeout_secs on line 3, the same setting spelt another way"}},
		{"three spellings of a timeout", s + "startup_timeout_ms = 7000\nstartup_timeout_sec = 6\nstartup_timeout_secs = 5\n", []string{
			"3: mcp_servers.s.startup_timeout_ms: set twice: also as startup_timeout_secs on line 5",
			"4: mcp_servers.s.startup_timeout_sec: set twice: also as startup_timeout_secs on line 5",
		}},
		{"both spellings of the tool timeout", s + "tool_timeout_sec = 6\ntool_timeout_secs = 5\n", []string{
			"3: mcp_servers.s.tool_timeout_sec: set twice: also as tool_timeout_secs on line 4"}},
		{"both spellings of headers", u + "headers = { A = \"b\" }\n[mcp_servers.u.http_headers]\nA = \"c\"\n", []string{
			"4: mcp_servers.u.http_headers: set twice: also as headers on line 3"}},
		{"codex headers on a command", s + "http_headers = { A = \"b\" }\n", []string{"3: mcp_servers.s.http_headers: http_headers is for a url server"}},
		{"codex env_vars", s + "env_vars = [\"HTTPS_PROXY\"]\n", []string{`3: mcp_servers.s.env_vars: unknown key; env_vars is Codex's list of variables passed on when they are set; myco names each one: env = { NAME = { source = "env", var_name = "NAME" } }`}},
		{"codex bearer_token_env_var", u + "bearer_token_env_var = \"T\"\n", []string{`3: mcp_servers.u.bearer_token_env_var: unknown key; bearer_token_env_var is Codex's; myco sends the variable's value as it is`}},
		{"codex enabled_tools", s + "enabled_tools = [\"a\"]\n", []string{"3: mcp_servers.s.enabled_tools: unknown key; enabled_tools is Codex's"}},
		{"enabled wrong type", s + "enabled = \"yes\"\n", []string{"3: mcp_servers.s.enabled: must be a boolean, not a string"}},
		{"bad host", s + "host = \"a b\"\n", []string{`3: mcp_servers.s.host: "a b" is not a host name`}},
		{"headers on a command", s + "headers = { A = \"b\" }\nallow_http = true\n", []string{
			"3: mcp_servers.s.headers: headers is for a url server",
			"4: mcp_servers.s.allow_http: allow_http is for a url server",
		}},
		{"command keys on a url", u + "args = [\"a\"]\ncwd = \"/\"\nenv = { A = \"b\" }\nhost = \"devbox\"\n", []string{
			"3: mcp_servers.u.args: args is for a command server",
			"4: mcp_servers.u.cwd: cwd is for a command server",
			"5: mcp_servers.u.env: env is for a command server",
			"6: mcp_servers.u.host: host is for a command server",
		}},
		{"url not http", "[mcp_servers.u]\nurl = \"ws://h/mcp\"\n", []string{`2: mcp_servers.u.url: "ws://h/mcp" is not an http or https URL`}},
		{"url plain http", "[mcp_servers.u]\nurl = \"http://docs.example/mcp\"\n", []string{`2: mcp_servers.u.url: "http://docs.example/mcp" is plain http to a host that is not loopback: use https, or set allow_http = true`}},
		{"url with a password", "[mcp_servers.u]\nurl = \"https://me:pw@h/mcp\"\n", []string{"2: mcp_servers.u.url: must not hold a user or password"}},
		{"header bad name", u + "headers = { \"a b\" = \"x\" }\n", []string{`3: mcp_servers.u.headers."a b": invalid header name "a b"`}},
		{"header reserved", u + "headers = { Mcp-Session-Id = \"x\" }\n", []string{"3: mcp_servers.u.headers.Mcp-Session-Id: Mcp-Session-Id is set by the MCP transport itself"}},
		{"header empty file source", u + "headers = { Authorization = { source = \"file\" } }\n", []string{"3: mcp_servers.u.headers.Authorization.path: required"}},
		{"every problem at once", s + "argv = 1\ntool_timeout_secs = 0\n" + u + "headers = { A = 1 }\n", []string{
			"3: mcp_servers.s.argv: unknown key",
			"4: mcp_servers.s.tool_timeout_secs: must be a positive number",
			"7: mcp_servers.u.headers.A: must be the value as a string or a table",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.src)
			c, err := Load(path, true)
			if err == nil {
				t.Fatalf("Load(%q) = %+v, want errors %q", tt.src, c, tt.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Errorf("Load(%q) gave %d problems, want %d:\n%v", tt.src, len(lines), len(tt.want), err)
			}
			for i, want := range tt.want {
				if i < len(lines) && !strings.HasPrefix(lines[i], path+":"+want) {
					t.Errorf("Load(%q) problem %d = %q, want %s:%s…", tt.src, i, lines[i], path, want)
				}
			}
			var e *Error
			if !errors.As(err, &e) || e.File != path {
				t.Errorf("Load(%q) = %#v, want an *Error naming the file", tt.src, err)
			}
		})
	}
}

// The loopback hosts take plain http without allow_http; others need it.
func TestMCPURL(t *testing.T) {
	for _, tt := range []struct {
		url   string
		allow bool
		ok    bool
	}{
		{"http://127.0.0.1:8931/mcp", false, true},
		{"http://127.9.9.9/mcp", false, true},
		{"http://localhost:3001/mcp", false, true},
		{"http://[::1]:3001/mcp", false, true},
		{"https://docs.example/mcp", false, true},
		{"http://10.0.0.2/mcp", false, false},
		{"http://localhost.evil.example/mcp", false, false},
		{"http://10.0.0.2/mcp", true, true},
		{"file:///tmp/x", true, false},
	} {
		if got := checkMCPURL(tt.url, tt.allow) == ""; got != tt.ok {
			t.Errorf("checkMCPURL(%q, allow_http %v) accepts = %v, want %v", tt.url, tt.allow, got, tt.ok)
		}
	}
}

// An unknown host is found once the caller knows the SSH config's hosts, and reported
// with the file, the line and the key.
func TestCheckMCPHosts(t *testing.T) {
	path := writeConfig(t, servers+"\n[mcp_servers.here]\ncommand = \"x\"\nhost = \"local\"\n")
	c, err := Load(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckMCPHosts([]string{"devbox", "b1"}); err != nil {
		t.Errorf("CheckMCPHosts(devbox, b1) = %v, want nil", err)
	}
	err = c.CheckMCPHosts([]string{"b2", "b1"})
	want := path + `:21: mcp_servers.db.host: unknown host "devbox": not a Host of ~/.ssh/config; known hosts: b1, b2`
	if err == nil || err.Error() != want {
		t.Errorf("CheckMCPHosts(b2, b1) = %v, want %s", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.Line != 21 || e.Key != "mcp_servers.db.host" {
		t.Errorf("CheckMCPHosts = %#v, want an *Error with line and key", err)
	}
	if err := c.CheckMCPHosts(nil); err == nil || !strings.HasSuffix(err.Error(), "known hosts: none") {
		t.Errorf("CheckMCPHosts(nil) = %v, want one saying no hosts are known", err)
	}
}

func TestMCPServerValues(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "tok"), []byte("file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := fakeEnv{"GH": "gh-token"}
	s := MCPServer{Name: "s",
		Env: map[string]Auth{
			"A":    {Source: AuthInline, Value: ""},
			"GH":   {Source: AuthEnv, VarName: "GH"},
			"NONE": {Source: AuthNone},
		},
		Headers: map[string]Auth{"Authorization": {Source: AuthFile, Path: "~/tok"}},
	}
	env, headers, err := s.Values(e.lookup, home)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"A": "", "GH": "gh-token"}; !reflect.DeepEqual(env, want) {
		t.Errorf("Values env = %q, want %q", env, want)
	}
	if want := map[string]string{"Authorization": "file-token"}; !reflect.DeepEqual(headers, want) {
		t.Errorf("Values headers = %q, want %q", headers, want)
	}
	s.Env["X"] = Auth{Source: AuthEnv, VarName: "NOPE"}
	if _, _, err := s.Values(e.lookup, home); err == nil || err.Error() != "mcp server s: env X: environment variable NOPE is not set" {
		t.Errorf("Values with an unset variable = %v", err)
	}
}

// An inline header value is a credential in the file: a file others can read warns, as
// for a gateway's auth. An inline env value does not (most are settings).
func TestLoadMCPInlineHeaderReadable(t *testing.T) {
	for _, tt := range []struct {
		name, src, want string
	}{
		{"header", "[mcp_servers.u]\nurl = \"https://h/mcp\"\nheaders = { Authorization = \"Bearer sk-x\" }\n",
			"$F:3: mcp_servers.u.headers.Authorization: an inline credential in a file that group or others may read"},
		{"env", "[mcp_servers.s]\ncommand = \"x\"\nenv = { LOG_LEVEL = \"debug\" }\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.src)
			chmod(t, path, 0o644)
			c, err := Load(path, true)
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprint(c.Warnings)
			if tt.want == "" && len(c.Warnings) > 0 || tt.want != "" && (len(c.Warnings) != 1 || !strings.HasPrefix(c.Warnings[0].String(), strings.ReplaceAll(tt.want, "$F", path))) {
				t.Errorf("Load warnings = %s, want %q", got, tt.want)
			}
			if strings.Contains(got, "sk-x") {
				t.Errorf("the warning %s reveals the credential", got)
			}
		})
	}
}

// A .env may supply the variables an MCP server's env names, like a gateway's.
func TestLoadDotEnvMCP(t *testing.T) {
	c, err := Parse("config.toml", []byte(servers))
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, ".env", "GITHUB_TOKEN=gh-x\nOTHER=y\n")
	env, _, err := LoadDotEnv(path, c, fakeEnv{}.lookup)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := env.Lookup("GITHUB_TOKEN"); !ok || v != "gh-x" {
		t.Errorf("Lookup(GITHUB_TOKEN) = %q, %v; want the .env's value", v, ok)
	}
	if _, ok := env.Lookup("OTHER"); ok {
		t.Error("Lookup(OTHER) found a variable no config names")
	}
}

// TestDocsMCPExample keeps docs/mcp.md honest: its configuration example loads, and its
// host is the only thing left for the SSH config to confirm.
func TestDocsMCPExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```toml\n")
	src, _, _ := strings.Cut(block, "```")
	if !ok || src == "" {
		t.Fatal("docs/mcp.md has no toml example")
	}
	c, err := Parse("example.toml", []byte(src))
	if err != nil {
		t.Fatalf("the example of docs/mcp.md: %v", err)
	}
	if got := c.MCPServerNames(); !slices.Equal(got, []string{"db", "docs", "github"}) {
		t.Errorf("the example's servers = %q", got)
	}
	if err := c.CheckMCPHosts([]string{"devbox"}); err != nil {
		t.Errorf("CheckMCPHosts(devbox) = %v", err)
	}
}
