package engine

import (
	"slices"
	"testing"

	"myco.dev/config"
)

// TestHarnessChanges (issue 28): a comment, a model, a gateway's auth or the default model
// need no new harness; the MCP servers, attach_timeout_secs, max_prelude_bytes and the
// catalog's largest image cap do, each named.
func TestHarnessChanges(t *testing.T) {
	const base = `model = "m"
[gateways.g]
protocol = "anthropic-messages"
base_url = "http://127.0.0.1:1"
auth = { source = "env", var_name = "G_KEY" }
[models.m]
gateway = "g"
context_window = 1000
[mcp_servers.fs]
command = "fs-server"
`
	parse := func(src string) *config.Config {
		t.Helper()
		c, err := config.Parse("config.toml", []byte(src))
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		return c
	}
	old := parse(base)
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"a comment", "# a comment\n" + base, nil},
		{"a model", base + "[models.m2]\nprotocol = \"openai-responses\"\nbase_url = \"http://127.0.0.1:2\"\ncontext_window = 10\nauth = { source = \"env\", var_name = \"NEW_KEY\" }\n", nil},
		{"a gateway's auth", "model = \"m\"\n[gateways.g]\nprotocol = \"anthropic-messages\"\nbase_url = \"http://127.0.0.1:1\"\nauth = \"sk-inline\"\n[models.m]\ngateway = \"g\"\ncontext_window = 1000\n[mcp_servers.fs]\ncommand = \"fs-server\"\n", nil},
		{"an MCP server's args", base + "args = [\"--root\", \"/x\"]\n", []string{"mcp_servers"}},
		{"attach_timeout_secs", "attach_timeout_secs = 3\n" + base, []string{"attach_timeout_secs"}},
		{"max_prelude_bytes", "max_prelude_bytes = 10\n" + base, []string{"max_prelude_bytes"}},
		{"a larger image cap", base + "[models.big]\ngateway = \"g\"\ncontext_window = 10\nmax_image_base64_bytes = 99999999\n", []string{"max_image_base64_bytes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := HarnessChanges(old, parse(tt.src)); !slices.Equal(got, tt.want) {
				t.Errorf("HarnessChanges = %q, want %q", got, tt.want)
			}
		})
	}
}
