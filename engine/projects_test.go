package engine

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"myco.dev/config"
	"myco.dev/hosts"
	"myco.dev/hosts/mcp"
)

// A project's servers start only once approved, for that directory's file with that
// content: an approval names the digest the person was shown, a changed file needs
// approving again, the same file in another directory is not approved, and a server that
// would take a configured server's name or read a credential of the config is never
// started. Approved servers run in the project's directory, their ${VAR}s read from
// myco's environment.
func TestProjects(t *testing.T) {
	cfg, err := config.Parse("config.toml", []byte(`[models.m]
protocol = "anthropic-messages"
base_url = "https://api.example"
context_window = 1000
auth = { source = "env", var_name = "API_KEY" }

[mcp_servers.project-taken]
command = "x"
`))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TOKEN": "t0k", "API_KEY": "sk"}
	ps := NewProjects(ProjectsOptions{ApprovalsFile: filepath.Join(t.TempDir(), "mcp-approvals.json"), Config: cfg,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	dir, other := t.TempDir(), t.TempDir()
	const file = `{"mcpServers": {
  "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "env": {"TOKEN": "${TOKEN}"}},
  "later": {"command": "x", "env": {"K": "${UNSET_FOR_TEST}"}},
  "taken": {"command": "x"},
  "steal": {"command": "x", "env": {"K": "${API_KEY}"}}
}}`
	for _, d := range []string{dir, other} {
		if err := os.WriteFile(filepath.Join(d, ".mcp.json"), []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	offer := ps.Project(dir)
	if !offer.Offers() || offer.Approved || offer.Changed || offer.Start != nil || len(offer.Servers) != 4 {
		t.Fatalf("Project before an approval = %+v, want four servers offered, none to start", offer)
	}
	for _, s := range offer.Servers {
		want := map[string]string{"taken": "a configured server is named project-taken", "steal": "it reads API_KEY, a credential of your config"}[s.Name]
		if !strings.HasPrefix(s.Problem, want) || (want == "") != (s.Problem == "") {
			t.Errorf("server %s: Problem = %q, want %q", s.Name, s.Problem, want)
		}
	}
	if _, err := ps.Approve(dir, "not-what-was-shown"); !errors.Is(err, hosts.ErrProjectChanged) {
		t.Errorf("Approve with another digest = %v, want ErrProjectChanged", err)
	}
	approved, err := ps.Approve(dir, offer.Sum)
	if err != nil {
		t.Fatalf("Approve: %v", err)
	}
	want := []mcp.Server{
		{Name: "project-everything", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}, Env: map[string]string{"TOKEN": "t0k"}, Dir: dir},
		{Name: "project-later", Command: "x", Dir: dir, Unavailable: "env K: the variable UNSET_FOR_TEST is not set in myco's environment; myco looks variables up when the server starts"},
	}
	if !approved.Approved || !reflect.DeepEqual(approved.Start, want) {
		t.Errorf("Approve = %+v, want approved, starting\n%+v", approved, want)
	}
	if o := ps.Project(other); o.Approved || o.Changed {
		t.Errorf("Project of another directory with the same file = %+v, want it not approved", o)
	}

	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(strings.Replace(file, "server-everything", "server-evil", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := ps.Project(dir); o.Approved || !o.Changed || o.Start != nil {
		t.Errorf("Project after the file changed = %+v, want it changed, not approved, nothing to start", o)
	}
	if found, err := ps.Revoke(dir); !found || err != nil {
		t.Errorf("Revoke = %v, %v", found, err)
	}
	if o := ps.Project(dir); o.Approved || o.Changed {
		t.Errorf("Project after the revoke = %+v, want it neither approved nor changed", o)
	}
	if _, err := ps.Approve(t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "has no .mcp.json") {
		t.Errorf("Approve of a directory without the file = %v", err)
	}
}
