package config

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// projectFile is a .mcp.json with a server of each kind and one of each mistake.
const projectFile = `{
  "mcpServers": {
    "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "env": {"LOG": "debug", "TOKEN": "${GH_TOKEN}", "REGION": "${REGION:-eu}"}},
    "docs": {"type": "http", "url": "https://docs.example/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
    "old": {"type": "sse", "url": "https://docs.example/sse"},
    "both": {"command": "x", "url": "https://h/mcp"},
    "neither": {"args": ["a"]},
    "odd": {"command": "x", "alwaysAllow": ["a"]},
    "argvar": {"command": "x", "args": ["${HOME}/bin"]},
    "steal": {"command": "x", "env": {"K": "${ANTHROPIC_API_KEY}"}},
    "mine": {"command": "x", "env": {"H": "${MYCO_HOME}"}},
    "plain": {"type": "http", "url": "http://docs.example/mcp"},
    "a.b": {"command": "x"},
    "this-name-is-far-too-long-for-it": {"command": "x"},
    "broken": {"command": "x", "env": {"A": "${B"}}
  }
}`

func TestLoadProjectMCP(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(projectFile), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse("config.toml", []byte("[models.m]\nprotocol = \"anthropic-messages\"\nbase_url = \"https://api.example\"\ncontext_window = 1000\nauth = { source = \"env\", var_name = \"ANTHROPIC_API_KEY\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := LoadProjectMCP(dir, cfg)
	if err != nil {
		t.Fatalf("LoadProjectMCP: %v", err)
	}
	sum := sha256.Sum256([]byte(projectFile))
	if p.Dir != dir || p.File != filepath.Join(dir, ".mcp.json") || p.Sum != hex.EncodeToString(sum[:]) || p.Problem != "" {
		t.Errorf("LoadProjectMCP = %+v, want the file, its digest and no problem", p)
	}
	want := map[string]ProjectServer{
		"everything": {Name: "everything", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"},
			Env: map[string]string{"LOG": "debug", "TOKEN": "${GH_TOKEN}", "REGION": "${REGION:-eu}"}, Vars: []string{"GH_TOKEN", "REGION"}},
		"docs": {Name: "docs", URL: "https://docs.example/mcp", Headers: map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}"}, Vars: []string{"DOCS_TOKEN"}},
	}
	problems := map[string]string{
		"old":                              `its type is "sse", the older HTTP transport`,
		"both":                             "it sets both command and url",
		"neither":                          "it sets neither a command nor a url",
		"odd":                              `it does not decode: unknown field "alwaysAllow"`,
		"argvar":                           "it uses ${…} in its command, args or url",
		"steal":                            "it reads ANTHROPIC_API_KEY, a credential of your config, which a project's server never gets",
		"mine":                             "it reads MYCO_HOME; MYCO_ variables are myco's own",
		"plain":                            "its url: \"http://docs.example/mcp\" is plain http to a host that is not loopback",
		"a.b":                              "its name is not letters, digits, '-' and '_'",
		"this-name-is-far-too-long-for-it": "its name is longer than 24 characters",
		"broken":                           "env A: a ${ is not closed",
	}
	if len(p.Servers) != len(want)+len(problems) {
		t.Errorf("LoadProjectMCP gave %d servers, want %d", len(p.Servers), len(want)+len(problems))
	}
	for i, s := range p.Servers {
		if i > 0 && p.Servers[i-1].Name >= s.Name {
			t.Errorf("servers not in name order: %s after %s", s.Name, p.Servers[i-1].Name)
		}
		if w, ok := want[s.Name]; ok && !reflect.DeepEqual(s, w) {
			t.Errorf("server %s =\n%#v\nwant\n%#v", s.Name, s, w)
		}
		if w, ok := problems[s.Name]; ok && !strings.HasPrefix(s.Problem, w) {
			t.Errorf("server %s: Problem = %q, want %q…", s.Name, s.Problem, w)
		}
	}
	if got := (ProjectServer{Name: "docs"}).Server(); got != "project-docs" {
		t.Errorf("Server() = %q, want project-docs", got)
	}
}

// ${VAR} reads myco's environment; a default stands in for an unset or empty variable; an
// unset one without a default is an error that names it.
func TestProjectServerValues(t *testing.T) {
	s := ProjectServer{Name: "x", Command: "x", Env: map[string]string{"TOKEN": "${GH_TOKEN}", "REGION": "${REGION:-eu}", "COST": "$5"},
		Headers: map[string]string{"Authorization": "Bearer ${GH_TOKEN}"}}
	env := map[string]string{"GH_TOKEN": "t0k", "REGION": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	gotEnv, gotHeaders, err := s.Values(lookup)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"TOKEN": "t0k", "REGION": "eu", "COST": "$5"}; !reflect.DeepEqual(gotEnv, want) {
		t.Errorf("env = %v, want %v", gotEnv, want)
	}
	if want := map[string]string{"Authorization": "Bearer t0k"}; !reflect.DeepEqual(gotHeaders, want) {
		t.Errorf("headers = %v, want %v", gotHeaders, want)
	}
	delete(env, "GH_TOKEN")
	if _, _, err := s.Values(lookup); err == nil || err.Error() != "env TOKEN: the variable GH_TOKEN is not set" {
		t.Errorf("Values with GH_TOKEN unset = %v, want it named", err)
	}
}

// A project file that is not a plain regular file is never read as one: a symlink (it
// could name a file the project does not own), a FIFO (it would block), a large file.
func TestLoadProjectMCPFiles(t *testing.T) {
	dir := t.TempDir()
	if p, err := LoadProjectMCP(dir, nil); p != nil || err != nil {
		t.Errorf("LoadProjectMCP of a directory without the file = %v, %v; want nil, nil", p, err)
	}
	for _, tt := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"symlink", func(p string) error {
			os.WriteFile(p+".real", []byte(`{"mcpServers":{}}`), 0o644)
			return os.Symlink(p+".real", p)
		}, "it is a symbolic link"},
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "it is a FIFO (named pipe), not a regular file"},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, "it is a directory, not a regular file"},
		{"large", func(p string) error {
			return os.WriteFile(p, []byte(`{"mcpServers":{}, "x":"`+strings.Repeat("a", MaxProjectMCPBytes)+`"}`), 0o644)
		}, "it is larger than 256 KiB"},
		{"not json", func(p string) error { return os.WriteFile(p, []byte("mcpServers:\n"), 0o644) }, "it is not JSON of the format"},
		{"too many", func(p string) error {
			var b strings.Builder
			b.WriteString(`{"mcpServers":{`)
			for i := range MaxProjectMCPServers + 1 {
				if i > 0 {
					b.WriteString(",")
				}
				b.WriteString(`"s` + strings.Repeat("x", i) + `":{"command":"x"}`)
			}
			b.WriteString("}}")
			return os.WriteFile(p, []byte(b.String()), 0o644)
		}, "it offers 33 servers; myco takes at most 32"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tt.make(filepath.Join(dir, ".mcp.json")); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			var p *ProjectMCP
			var err error
			go func() { p, err = LoadProjectMCP(dir, nil); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("LoadProjectMCP blocked")
			}
			if err != nil || p == nil || !strings.HasPrefix(p.Problem, tt.want) || len(p.Servers) != 0 {
				t.Errorf("LoadProjectMCP = %+v, %v; want Problem %q and no servers", p, err, tt.want)
			}
		})
	}
}

func TestMCPApprovals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp-approvals.json")
	if as, err := LoadMCPApprovals(path); as != nil || err != nil {
		t.Fatalf("LoadMCPApprovals of a missing file = %v, %v", as, err)
	}
	at := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	for _, a := range []MCPApproval{
		{Dir: "/src/b", Sum: "11", Servers: []string{"x"}, At: at},
		{Dir: "/src/a/", Sum: "22", Servers: []string{"y"}, At: at},
		{Dir: "/src/b", Sum: "33", Servers: []string{"x", "z"}, At: at}, // b's file changed and was approved again
	} {
		if err := ApproveProjectMCP(path, a); err != nil {
			t.Fatal(err)
		}
	}
	as, err := LoadMCPApprovals(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []MCPApproval{{Dir: "/src/a", Sum: "22", Servers: []string{"y"}, At: at}, {Dir: "/src/b", Sum: "33", Servers: []string{"x", "z"}, At: at}}
	if !reflect.DeepEqual(as, want) {
		t.Errorf("approvals = %+v, want %+v", as, want)
	}
	if a := ApprovalFor(as, "/src/b/"); a == nil || a.Sum != "33" {
		t.Errorf("ApprovalFor(/src/b/) = %+v, want the later approval", a)
	}
	if a := ApprovalFor(as, "/src"); a != nil {
		t.Errorf("ApprovalFor(/src) = %+v, want none: an approval is of one directory", a)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the approvals file is %v (%v), want mode 0600", info, err)
	}
	if found, err := RevokeProjectMCP(path, "/src/a"); !found || err != nil {
		t.Errorf("RevokeProjectMCP(/src/a) = %v, %v", found, err)
	}
	if found, err := RevokeProjectMCP(path, "/src/a"); found || err != nil {
		t.Errorf("RevokeProjectMCP(/src/a) again = %v, %v; want not found", found, err)
	}
	if as, _ := LoadMCPApprovals(path); len(as) != 1 || as[0].Dir != "/src/b" {
		t.Errorf("after the revoke: %+v", as)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadMCPApprovals(path); err == nil || !strings.Contains(err.Error(), "group or others may write to it") {
		t.Errorf("LoadMCPApprovals of a file others may write = %v, want it refused", err)
	}
}
