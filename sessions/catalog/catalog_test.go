package catalog

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"myco.dev/agent/model"
	"myco.dev/config"
	"myco.dev/sessions"
)

const testConfig = `model = "big"
[models.big]
protocol = "anthropic-messages"
base_url = "http://127.0.0.1:9"
context_window = 200000
max_image_base64_bytes = 4000
[models.small]
protocol = "openai-completions"
base_url = "http://127.0.0.1:9"
context_window = 8000
max_image_base64_bytes = 1000
auth = { source = "env", var_name = "SMALL_KEY" }
`

func testCatalog(t *testing.T) (*config.Config, *Catalog) {
	t.Helper()
	cfg, err := config.Parse("config.toml", []byte(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, New(Options{Config: cfg, Default: "big", Env: config.NewEnv(func(string) (string, bool) { return "", false }),
		Tools: fakeTools{}})
}

type fakeTools struct{}

func (fakeTools) Specs() []model.ToolSpec {
	return []model.ToolSpec{{Name: "bash", Description: "run commands", Schema: []byte(`{"type":"object"}`)}}
}
func (fakeTools) Hosts() []string { return []string{"local", "devbox"} }

// TestCatalogAgent: a key becomes the agent's options with the system prompt built from the
// tools, the hosts and the blocks; a key keeps its client; a key the catalog does not have
// is an error.
func TestCatalogAgent(t *testing.T) {
	_, c := testCatalog(t)
	if c.Default() != "big" {
		t.Errorf("Default() = %q, want big", c.Default())
	}
	cfg, err := c.Agent("small", []string{"BLOCK ONE"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ModelKey != "small" || cfg.Protocol != "openai-completions" || cfg.ContextWindow != 8000 || cfg.MaxImageBase64Bytes != 1000 || cfg.Options.APIModel != "small" {
		t.Errorf("Agent(small) = %+v", cfg)
	}
	for _, want := range []string{"bash", "devbox", "BLOCK ONE"} {
		if !strings.Contains(cfg.Options.System, want) {
			t.Errorf("the system prompt lacks %q:\n%s", want, cfg.Options.System)
		}
	}
	again, _ := c.Agent("small", nil)
	if again.Options.Model != cfg.Options.Model {
		t.Error("Agent(small) twice made two clients, want one per key")
	}
	if _, err := c.Agent("nope", nil); err == nil {
		t.Error("Agent(nope) = nil error, want one naming the key")
	}
}

func TestCatalogList(t *testing.T) {
	_, c := testCatalog(t)
	want := []sessions.ModelInfo{{Key: "big", ContextWindow: 200000, MaxImageBase64Bytes: 4000}, {Key: "small", ContextWindow: 8000, MaxImageBase64Bytes: 1000}}
	if got := c.List(); !slices.Equal(got, want) {
		t.Errorf("List() = %+v, want %+v", got, want)
	}
}

// TestToolEnv: tool processes get the profile's variables, never the credentials the
// catalog names, and the server's URL and token file only when this process serves.
func TestToolEnv(t *testing.T) {
	cfg, _ := testCatalog(t)
	paths := config.Paths{Home: "/h", Profile: "work"}
	env := []string{"PATH=/bin", "SMALL_KEY=secret", "MYCO_PROFILE=other", "MYCO_SERVER_TOKEN=t"}
	got := ToolEnv(LocalOptions{Paths: paths, Config: cfg, Env: env})
	if want := []string{"PATH=/bin", "MYCO_PROFILE=work", "MYCO_HOME=/h"}; !slices.Equal(got, want) {
		t.Errorf("ToolEnv = %q, want %q", got, want)
	}
	got = ToolEnv(LocalOptions{Paths: paths, Config: cfg, Env: env, ServerURL: "http://127.0.0.1:1/profiles/work", TokenFile: "/h/t"})
	if !slices.Contains(got, "MYCO_SERVER_URL=http://127.0.0.1:1/profiles/work") || !slices.Contains(got, "MYCO_SERVER_TOKEN_FILE=/h/t") {
		t.Errorf("ToolEnv when serving = %q, want the URL and the token file", got)
	}
	if LargestImageCap(cfg) != 4000 {
		t.Errorf("LargestImageCap = %d, want 4000", LargestImageCap(cfg))
	}
}

// TestPrompt: the blocks are the MCP servers, the manual's index, project guidance, the
// prelude and the workspace listing, in that order; the MCP servers' tools are listed
// before the blocks are read.
func TestPrompt(t *testing.T) {
	home := t.TempDir()
	paths, err := config.ResolvePaths(config.PathOptions{Getenv: func(k string) string {
		if k == "MYCO_HOME" {
			return home
		}
		return ""
	}, UserHome: home})
	if err != nil {
		t.Fatal(err)
	}
	if err := paths.Ensure(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "AGENTS.md"), "Use tabs.\n")
	writeFile(t, filepath.Join(paths.PreludeDir(), "note.md"), "remember this\n")
	manual := fstest.MapFS{"cli.md": {Data: []byte("# myco -p: one-shot prompts\n")}}
	var warned []string
	cfg, err := config.Parse("config.toml", []byte(testConfig+"[mcp_servers.gh]\ncommand = \"gh-mcp\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var discovered discoverCount
	read := Prompt(PromptOptions{Paths: paths, MaxPreludeBytes: 1 << 20, Manual: manual, Warn: func(s string) { warned = append(warned, s) },
		Config: cfg, Tools: &discovered})
	blocks, watcher, err := read(dir)
	if err != nil || watcher == nil {
		t.Fatalf("Prompt() = %v, %v", watcher, err)
	}
	if len(blocks) != 5 || !strings.Contains(blocks[0], "gh (on local)") || !strings.Contains(blocks[2], "Use tabs.") || !strings.Contains(blocks[3], "remember this") {
		t.Errorf("blocks = %q, want the MCP servers, the manual's index, the guidance, the prelude, the listing", blocks)
	}
	if discovered != 1 {
		t.Errorf("Discover ran %d times, want once", discovered)
	}
	// Another session in the same directory gets the same bytes; one elsewhere, its own
	// directory's guidance.
	if again, _, _ := read(dir); !slices.Equal(again, blocks) {
		t.Errorf("the blocks of a second session in %s differ:\n%q\n%q", dir, again, blocks)
	}
	other := t.TempDir()
	writeFile(t, filepath.Join(other, "AGENTS.md"), "Use spaces.\n")
	if elsewhere, _, _ := read(other); !strings.Contains(elsewhere[2], "Use spaces.") || strings.Contains(elsewhere[2], "Use tabs.") {
		t.Errorf("the guidance of a session in %s = %q", other, elsewhere[2])
	}
	if len(warned) != 0 {
		t.Errorf("warned %q, want nothing", warned)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

type discoverCount int

func (d *discoverCount) Discover(context.Context) { *d++ }

// TestCatalogCheck: Check answers for a key what Agent would, without building a run's
// configuration.
func TestCatalogCheck(t *testing.T) {
	_, c := testCatalog(t)
	for _, key := range []string{"big", "small", "nope", ""} {
		_, aerr := c.Agent(key, nil)
		cerr := c.Check(key)
		if (aerr == nil) != (cerr == nil) || aerr != nil && aerr.Error() != cerr.Error() {
			t.Errorf("Check(%q) = %v, Agent gives %v", key, cerr, aerr)
		}
	}
	if c.Check("nope") == nil {
		t.Error("Check(nope) = nil, want an error naming the key")
	}
}

// TestCatalogWarm: Warm opens the connection of the default model (or of the key named) to
// its endpoint, for its first request; a key the catalog does not have opens nothing.
func TestCatalogWarm(t *testing.T) {
	conns := make(chan struct{}, 8)
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()
	cfg, err := config.Parse("config.toml", []byte(strings.ReplaceAll(testConfig, "http://127.0.0.1:9", srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{Config: cfg, Default: "big", Env: config.NewEnv(func(string) (string, bool) { return "", false }), Tools: fakeTools{}})
	c.Warm(t.Context(), "nope")
	c.Warm(t.Context(), "")
	select {
	case <-conns:
	case <-time.After(5 * time.Second):
		t.Fatal("Warm opened no connection to the default model's endpoint")
	}
	select {
	case <-conns:
		t.Error("a second connection: an unknown key opened one, or Warm opened two")
	case <-time.After(50 * time.Millisecond):
	}
}

// TestCatalogEndpoint: a run's configuration says where its model is served from, for the
// words of its failures: the gateway, the tables its base_url and auth come from (a model's
// own replaces its gateway's), where the credential is read, and a base_url shown without
// its userinfo or query. The credential itself is nowhere in it.
func TestCatalogEndpoint(t *testing.T) {
	cfg, err := config.Parse("config.toml", []byte(`
[gateways.gw]
protocol = "anthropic-messages"
base_url = "https://user:secret@gw.example/v1?key=secret"
auth = { source = "env", var_name = "GW_KEY" }
[models.via]
gateway = "gw"
context_window = 1000
[models.own]
gateway = "gw"
context_window = 1000
auth = { source = "file", path = "~/.keys/own" }
[models.inline]
protocol = "openai-completions"
base_url = "http://127.0.0.1:9"
auth = "sk-inline-secret"
context_window = 1000
`))
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{Config: cfg, Default: "via", Env: config.NewEnv(func(string) (string, bool) { return "", false })})
	for _, tt := range []struct {
		key  string
		want sessions.Endpoint
	}{
		{"via", sessions.Endpoint{Gateway: "gw", BaseURL: "https://gw.example/v1", BaseURLOf: "gateway gw", AuthOf: "gateway gw", AuthSource: "env", AuthName: "GW_KEY"}},
		{"own", sessions.Endpoint{Gateway: "gw", BaseURL: "https://gw.example/v1", BaseURLOf: "gateway gw", AuthOf: "model own", AuthSource: "file", AuthName: "~/.keys/own"}},
		{"inline", sessions.Endpoint{BaseURL: "http://127.0.0.1:9", BaseURLOf: "model inline", AuthOf: "model inline", AuthSource: "inline"}},
	} {
		ac, err := c.Agent(tt.key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ac.Endpoint != tt.want {
			t.Errorf("Agent(%s).Endpoint = %+v, want %+v", tt.key, ac.Endpoint, tt.want)
		}
		if s := fmt.Sprintf("%+v", ac.Endpoint); strings.Contains(s, "secret") {
			t.Errorf("Agent(%s).Endpoint holds a credential: %s", tt.key, s)
		}
	}
}

// TestCatalogObserve: each model's client tells the catalog's observer of its attempts,
// with the model's key.
func TestCatalogObserve(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"no"}}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	cfg, err := config.Parse("config.toml", []byte(strings.ReplaceAll(testConfig, "http://127.0.0.1:9", srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		key    string
		status int
	}
	var got []seen
	c := New(Options{Config: cfg, Default: "big", Env: config.NewEnv(func(string) (string, bool) { return "", false }),
		Observe: func(key string, a model.Attempt) { got = append(got, seen{key, a.Status}) }})
	run, err := c.Agent("big", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range run.Options.Model.Stream(t.Context(), model.Request{Model: "big"}) {
		if err != nil {
			break
		}
	}
	if want := []seen{{"big", 401}}; !slices.Equal(got, want) {
		t.Errorf("observed %v, want %v", got, want)
	}
}
