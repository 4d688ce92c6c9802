package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// edited is a config with comments, other tables, a server with a sub-table elsewhere, and
// values that span lines, one of which holds a line that looks like a header.
const edited = `# my config
model = "m" # the default

[models.m]
protocol = "anthropic-messages"
base_url = "http://127.0.0.1:9"
context_window = 100000

# the GitHub server
[mcp_servers.github]
command = "github-mcp-server" # from brew
# its arguments
args = [
  "stdio",
  """
[mcp_servers.ghost]
""",
]

# the docs server, below
[mcp_servers.docs]
url = "https://docs.example/mcp"

[gateways.g]
protocol = "anthropic-messages"
base_url = 'https://g.example/v1'

[mcp_servers.github.env]
LOG = "warn"
`

func TestRemoveMCPServer(t *testing.T) {
	for _, tt := range []struct {
		name, src, server, want string
	}{
		{"a table, its comments among its keys and its sub-table elsewhere", edited, "github", `# my config
model = "m" # the default

[models.m]
protocol = "anthropic-messages"
base_url = "http://127.0.0.1:9"
context_window = 100000

# the GitHub server

# the docs server, below
[mcp_servers.docs]
url = "https://docs.example/mcp"

[gateways.g]
protocol = "anthropic-messages"
base_url = 'https://g.example/v1'
`},
		{"the table between two others, its comment above kept", edited, "docs", strings.Replace(edited, `[mcp_servers.docs]
url = "https://docs.example/mcp"
`, "", 1)},
		{"the only table", "[mcp_servers.a]\ncommand = \"x\"\n", "a", ""},
		{"the first of two", "[mcp_servers.a]\ncommand = \"x\"\n\n[mcp_servers.b]\ncommand = \"y\"\n", "a", "[mcp_servers.b]\ncommand = \"y\"\n"},
		{"the last, with CRLF", "[mcp_servers.a]\r\ncommand = \"x\"\r\n\r\n[mcp_servers.b]\r\ncommand = \"y\"\r\n", "b", "[mcp_servers.a]\r\ncommand = \"x\"\r\n"},
		{"no line break at the end", "model = \"m\"\n\n[mcp_servers.a]\ncommand = \"x\"", "a", "model = \"m\"\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.src)
			if err := RemoveMCPServer(path, true, tt.server); err != nil {
				t.Fatalf("RemoveMCPServer(%s): %v", tt.server, err)
			}
			got, _ := os.ReadFile(path)
			if string(got) != tt.want {
				t.Errorf("RemoveMCPServer(%s) left\n%s\nwant\n%s", tt.server, got, tt.want)
			}
		})
	}
}

// What cannot be removed safely is refused with the file's line, and the file is left as
// it was.
func TestRemoveMCPServerRefused(t *testing.T) {
	for _, tt := range []struct {
		name, src, server, want string
	}{
		{"unknown", "[mcp_servers.a]\ncommand = \"x\"\n", "b", "configures no mcp server b; the configured ones are a"},
		{"none", "model = \"m\"\n", "b", "configures no mcp server b; none is configured"},
		{"inline", "mcp_servers = { a = { command = \"x\" } }\n", "a", "config.toml:1: mcp server a is written in a form myco does not edit"},
		{"in the mcp_servers table", "[mcp_servers]\na = { command = \"x\" }\n", "a", "config.toml:2: mcp server a is written in a form myco does not edit"},
		{"dotted", "mcp_servers.a.command = \"x\"\n", "a", "config.toml:1: mcp server a is written in a form myco does not edit"},
		{"a broken file", "[mcp_servers.a]\ncommand = \"x\"\nnope = 1\n", "a", "myco changes a config that loads, and this one does not; fix it first: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.src)
			err := RemoveMCPServer(path, true, tt.server)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("RemoveMCPServer(%s) = %v, want %q", tt.server, err, tt.want)
			}
			if got, _ := os.ReadFile(path); string(got) != tt.src {
				t.Errorf("RemoveMCPServer(%s) changed the file to\n%s", tt.server, got)
			}
		})
	}
}

func TestAddMCPServer(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		s         MCPServer
		want      string // appended to src
		line      int
	}{
		{"a command, after comments", edited, MCPServer{Name: "fs", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", `C:\a "b"`},
			Env: map[string]Auth{"TOKEN": {Source: AuthEnv, VarName: "FS_TOKEN"}, "LOG": {Source: AuthInline, Value: "warn\tx"}}, Cwd: "~/src", Enabled: true},
			`
[mcp_servers.fs]
command = "npx"
cwd = "~/src"
args = ["-y", "@modelcontextprotocol/server-filesystem", "C:\\a \"b\""]
env = { LOG = "warn\tx", TOKEN = { source = "env", var_name = "FS_TOKEN" } }
`, 31},
		{"a url, to a file without a line break at the end", "model = \"m\"", MCPServer{Name: "docs", URL: "http://127.0.0.1:8931/mcp",
			Headers: map[string]Auth{"X-Key": {Source: AuthFile, Path: "~/.k"}}, ToolTimeout: 1500 * time.Millisecond, Enabled: true},
			`

[mcp_servers.docs]
url = "http://127.0.0.1:8931/mcp"
headers = { X-Key = { source = "file", path = "~/.k" } }
tool_timeout_secs = 1.5
`, 3},
		{"to an empty file", "", MCPServer{Name: "a", Command: "x", Enabled: true}, "[mcp_servers.a]\ncommand = \"x\"\n", 1},
		{"to a CRLF file", "model = \"m\"\r\n", MCPServer{Name: "a", Command: "x", Enabled: true}, "\r\n[mcp_servers.a]\r\ncommand = \"x\"\r\n", 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.src)
			if err := os.Chmod(path, 0o640); err != nil {
				t.Fatal(err)
			}
			line, err := AddMCPServer(path, true, tt.s)
			if err != nil {
				t.Fatalf("AddMCPServer(%s): %v", tt.s.Name, err)
			}
			got, _ := os.ReadFile(path)
			if string(got) != tt.src+tt.want || line != tt.line {
				t.Errorf("AddMCPServer(%s) = line %d, file\n%s\nwant line %d, file\n%s", tt.s.Name, line, got, tt.line, tt.src+tt.want)
			}
			if info, _ := os.Stat(path); info.Mode().Perm() != 0o640 {
				t.Errorf("AddMCPServer changed the file's mode to %v, want 0640", info.Mode().Perm())
			}
		})
	}
}

func TestAddMCPServerRefused(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		s         MCPServer
		want      string
	}{
		{"a name that exists", edited, MCPServer{Name: "docs", Command: "x"}, "config.toml:21: mcp server docs is already configured; remove it first (myco mcp remove docs)"},
		{"a disabled name that exists", "[mcp_servers.a]\ncommand = \"x\"\nenabled = false\n", MCPServer{Name: "a", Command: "x"}, "config.toml:1: mcp server a is already configured"},
		{"a bad name", "", MCPServer{Name: "a]\nb", Command: "x"}, `invalid mcp server name "a]\nb"`},
		{"an inline mcp_servers", "mcp_servers = { b = { command = \"y\" } }\n", MCPServer{Name: "a", Command: "x"}, "config.toml:1: mcp_servers is written as one inline table"},
		{"a result that does not load", "", MCPServer{Name: "a", Command: "x", Cwd: "rel"}, "is left as it was: the changed file would not load: "},
		{"a broken file", "nope = 1\n", MCPServer{Name: "a", Command: "x"}, "myco changes a config that loads, and this one does not; fix it first: "},
		{"not UTF-8", "", MCPServer{Name: "a", Command: "x\xff"}, "mcp server a: command is not UTF-8 text"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.src)
			_, err := AddMCPServer(path, true, tt.s)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("AddMCPServer(%s) = %v, want %q", tt.s.Name, err, tt.want)
			}
			if got, _ := os.ReadFile(path); string(got) != tt.src {
				t.Errorf("AddMCPServer(%s) changed the file to\n%s", tt.s.Name, got)
			}
		})
	}
}

// A missing config that is not named is created private; a config reached through a
// symlink is written where the link points, and the link stays.
func TestAddMCPServerFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	if _, err := AddMCPServer(path, false, MCPServer{Name: "a", Command: "x", Enabled: true}); err != nil {
		t.Fatalf("AddMCPServer to a missing file: %v", err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("AddMCPServer made %v (%v), want a 0600 file", info, err)
	}
	if _, err := AddMCPServer(filepath.Join(dir, "named.toml"), true, MCPServer{Name: "a", Command: "x"}); err == nil || !strings.Contains(err.Error(), "the named config file does not exist") {
		t.Errorf("AddMCPServer to a missing named file = %v, want it refused", err)
	}

	real := filepath.Join(dir, "real.toml")
	if err := os.WriteFile(real, []byte("model = \"m\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.toml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := AddMCPServer(link, true, MCPServer{Name: "a", Command: "x", Enabled: true}); err != nil {
		t.Fatalf("AddMCPServer through a symlink: %v", err)
	}
	if got, _ := os.ReadFile(real); !strings.Contains(string(got), "[mcp_servers.a]") {
		t.Errorf("the symlink's target is\n%s\nwant the new table in it", got)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink is %v (%v) after the edit, want it kept", info, err)
	}
}
