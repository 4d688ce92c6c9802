package catalog

import (
	"strings"
	"testing"
	"time"

	"myco.dev/config"
)

const mcpConfig = `
[mcp_servers.gh]
command = "~/bin/gh-mcp"
args = ["stdio"]
cwd = "~/work"
env = { TOKEN = { source = "env", var_name = "GH_TOKEN" }, MODE = "ro" }
startup_timeout_secs = 5

[mcp_servers.docs]
url = "http://127.0.0.1:8931/mcp"
headers = { Authorization = { source = "file", path = "~/missing-token" } }

[mcp_servers.db]
host = "devbox"
command = "~/bin/pg-mcp"
cwd = "~/srv"
tool_timeout_secs = 30

[mcp_servers.old]
command = "old-mcp"
enabled = false
`

// TestMCP: the config's servers resolved: ~ expanded for the local ones and left for
// the host of a remote one, credentials looked up, a credential that cannot be found
// making only its server unavailable, disabled servers named.
func TestMCP(t *testing.T) {
	cfg, err := config.Parse("config.toml", []byte(testConfig+mcpConfig))
	if err != nil {
		t.Fatal(err)
	}
	env := config.NewEnv(func(k string) (string, bool) {
		if k == "GH_TOKEN" {
			return "ghp-secret", true
		}
		return "", false
	})
	got := MCP(MCPOptions{Config: cfg, Env: env, Home: "/home/u"})
	if len(got.Local) != 2 || len(got.Remote) != 1 || len(got.Disabled) != 1 || got.Disabled[0] != "old" {
		t.Fatalf("MCP = %+v", got)
	}
	docs, gh := got.Local[0], got.Local[1]
	if gh.Name != "gh" || gh.Command != "/home/u/bin/gh-mcp" || gh.Dir != "/home/u/work" || gh.Env["TOKEN"] != "ghp-secret" || gh.Env["MODE"] != "ro" ||
		gh.StartupTimeout != 5*time.Second || gh.Unavailable != "" {
		t.Errorf("gh = %+v", gh)
	}
	if docs.Name != "docs" || docs.URL != "http://127.0.0.1:8931/mcp" || !strings.Contains(docs.Unavailable, "could not be looked up") || !strings.Contains(docs.Unavailable, "missing-token") {
		t.Errorf("docs = %+v, want it unavailable, naming the missing file", docs)
	}
	db := got.Remote[0]
	if db.Host != "devbox" || db.Server.Name != "db" || db.Server.Command != "~/bin/pg-mcp" || db.Server.Dir != "~/srv" ||
		db.Server.ToolTimeoutMS != 30000 || db.Server.StartupTimeoutMS != 10000 || db.Unavailable != "" {
		t.Errorf("db = %+v", db)
	}

	block := mcpBlock(cfg)
	if !strings.Contains(block, "db (on host devbox), docs (over HTTP), gh (on local).") || strings.Contains(block, "old") {
		t.Errorf("mcpBlock = %q", block)
	}
	if again := mcpBlock(cfg); again != block {
		t.Errorf("mcpBlock differs between two calls: %q, %q", block, again)
	}
	if b := mcpBlock(&config.Config{}); b != "" {
		t.Errorf("mcpBlock without servers = %q, want none", b)
	}
}
