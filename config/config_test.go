package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeConfig(t *testing.T, src string) string {
	t.Helper()
	return writeFile(t, "config.toml", src)
}

// catalog is the catalog of the spec, with top-level keys and overrides added.
const catalog = `
model = "kimi-k3"
attach_timeout_secs = 0
max_prelude_bytes = 1_000
compaction_max_requests = 7

[gateways.anthropic]
protocol = "anthropic-messages"
base_url = "https://api.anthropic.com/"
auth = { source = "env", var_name = "ANTHROPIC_API_KEY" }
response_header_timeout_secs = 60
stream_idle_timeout_secs = 600

[gateways.openrouter]
protocol = "openai-responses"
base_url = "https://openrouter.ai/api/v1"
auth = { source = "file", path = "~/.keys/openrouter" }
max_request_bytes = 20_000_000

[gateways.ollama]
protocol = "openai-completions"
base_url = "http://localhost:11434/v1"

[gateways.anthropic.retry]
max_attempts = 5
max_backoff_ms = 60_000

[models.claude-opus-4-8]
gateway = "anthropic"
context_window = 1_000_000
auto_compact_at = 0.8

[models.claude-haiku-4-5]
gateway = "anthropic"
thinking = "budget"
context_window = 200_000
auth = "sk-inline"
max_request_bytes = 10_000_000
stream_idle_timeout_secs = 0

[models.claude-haiku-4-5.retry]
initial_backoff_ms = 100

[models.kimi-k3]
gateway = "openrouter"
api_id = "moonshotai/kimi-k3"
context_window = 1_000_000
max_output_tokens = 32_000
max_image_base64_bytes = 1_000
max_truncated_resumes = 0

[models.local-qwen]
protocol = "openai-completions"
base_url = "http://localhost:11434/v1"
api_id = "qwen3:8b"
thinking = "none"
context_window = 32768
auth = { source = "none" }
response_header_timeout_secs = 30

[models."grok-4.5-build"]
gateway = "ollama"
protocol = "openai-responses"
base_url = "https://api.x.ai/v1"
auth.source = "env"
auth.var_name = "XAI_API_KEY"
context_window = 500_000
`

func TestLoadCatalog(t *testing.T) {
	path := writeConfig(t, catalog)
	c, err := Load(path, true)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.File != path || c.Model != "kimi-k3" || c.AttachTimeoutSecs != 0 || c.MaxPreludeBytes != 1000 || c.CompactionMaxRequests != 7 {
		t.Errorf("Load top level = %q %q %d %d %d", c.File, c.Model, c.AttachTimeoutSecs, c.MaxPreludeBytes, c.CompactionMaxRequests)
	}
	anthropicRetry := Retry{MaxAttempts: 5, InitialBackoffMs: 500, MaxBackoffMs: 60_000, BackoffMultiplier: 2}
	anthropicAuth := Auth{Source: AuthEnv, VarName: "ANTHROPIC_API_KEY"}
	for _, want := range []Model{
		{
			Key: "claude-opus-4-8", APIID: "claude-opus-4-8", Gateway: "anthropic",
			Protocol: ProtocolAnthropicMessages, BaseURL: "https://api.anthropic.com", // trailing slash dropped
			Auth: anthropicAuth, Retry: anthropicRetry, MaxRequestBytes: 30_000_000,
			ResponseHeaderTimeout: time.Minute, StreamIdleTimeout: 10 * time.Minute, // the gateway's
			ContextWindow: 1_000_000, Thinking: ThinkingAdaptive, MaxOutputTokens: 8192,
			MaxImageBase64Bytes: 5 << 20, MaxTruncatedResumes: 3, AutoCompactAt: 0.8,
		},
		{
			// The model's retry table replaces the gateway's: max_attempts and
			// max_backoff_ms are back at the defaults, not the gateway's 5 and 60000.
			Key: "claude-haiku-4-5", APIID: "claude-haiku-4-5", Gateway: "anthropic",
			Protocol: ProtocolAnthropicMessages, BaseURL: "https://api.anthropic.com",
			Auth:            Auth{Source: AuthInline, Value: "sk-inline"},
			Retry:           Retry{MaxAttempts: 3, InitialBackoffMs: 100, MaxBackoffMs: 30_000, BackoffMultiplier: 2},
			MaxRequestBytes: 10_000_000, ResponseHeaderTimeout: time.Minute, StreamIdleTimeout: 0, // 0 disables
			ContextWindow: 200_000, Thinking: ThinkingBudget, MaxOutputTokens: 8192,
			MaxImageBase64Bytes: 5 << 20, MaxTruncatedResumes: 3,
		},
		{
			Key: "kimi-k3", APIID: "moonshotai/kimi-k3", Gateway: "openrouter",
			Protocol: ProtocolOpenAIResponses, BaseURL: "https://openrouter.ai/api/v1",
			Auth: Auth{Source: AuthFile, Path: "~/.keys/openrouter"}, Retry: DefaultRetry(), MaxRequestBytes: 20_000_000,
			ResponseHeaderTimeout: 120 * time.Second, StreamIdleTimeout: 300 * time.Second,
			ContextWindow: 1_000_000, Thinking: ThinkingEffort, Effort: DefaultEffort, MaxOutputTokens: 32_000,
			MaxImageBase64Bytes: 1000, MaxTruncatedResumes: 0,
		},
		{
			Key: "local-qwen", APIID: "qwen3:8b",
			Protocol: ProtocolOpenAICompletions, BaseURL: "http://localhost:11434/v1",
			Auth: Auth{Source: AuthNone}, Retry: DefaultRetry(), MaxRequestBytes: 30_000_000,
			ResponseHeaderTimeout: 30 * time.Second, StreamIdleTimeout: DefaultStreamIdleTimeout,
			ContextWindow: 32768, Thinking: ThinkingNone, MaxOutputTokens: 8192,
			MaxImageBase64Bytes: 5 << 20, MaxTruncatedResumes: 3,
		},
		{
			// Model-level protocol, base_url and auth override the gateway's, and the
			// default thinking mode follows the model's protocol.
			Key: "grok-4.5-build", APIID: "grok-4.5-build", Gateway: "ollama",
			Protocol: ProtocolOpenAIResponses, BaseURL: "https://api.x.ai/v1",
			Auth: Auth{Source: AuthEnv, VarName: "XAI_API_KEY"}, Retry: DefaultRetry(), MaxRequestBytes: 30_000_000,
			ResponseHeaderTimeout: DefaultResponseHeaderTimeout, StreamIdleTimeout: DefaultStreamIdleTimeout,
			ContextWindow: 500_000, Thinking: ThinkingEffort, Effort: DefaultEffort, MaxOutputTokens: 8192,
			MaxImageBase64Bytes: 5 << 20, MaxTruncatedResumes: 3,
		},
	} {
		got, err := c.Resolve(want.Key)
		if err != nil {
			t.Errorf("Resolve(%q): %v", want.Key, err)
			continue
		}
		if got != want {
			t.Errorf("Resolve(%q) =\n%+v, want\n%+v", want.Key, got, want)
		}
	}
	if len(c.Models) != 5 {
		t.Errorf("Load has %d models, want 5", len(c.Models))
	}
	if g := c.Gateways["ollama"]; g.Auth != (Auth{}) || g.Retry != DefaultRetry() || g.MaxRequestBytes != DefaultMaxRequestBytes ||
		g.ResponseHeaderTimeout != 2*time.Minute || g.StreamIdleTimeout != 5*time.Minute {
		t.Errorf("gateway ollama = %+v, want no auth and the defaults", g)
	}
}

func TestLoadDefaults(t *testing.T) {
	c, err := Load(writeConfig(t, "[models.m]\nprotocol = \"anthropic-messages\"\nbase_url = \"http://h\"\ncontext_window = 10\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "" || c.AttachTimeoutSecs != 10 || c.MaxPreludeBytes != 262_144 || c.CompactionMaxRequests != 64 {
		t.Errorf("Load defaults = %q %d %d %d", c.Model, c.AttachTimeoutSecs, c.MaxPreludeBytes, c.CompactionMaxRequests)
	}
	m := c.Models["m"]
	if m.Auth.Source != "" || m.AutoCompactAt != 0 || m.Retry != (Retry{3, 500, 30_000, 2.0}) {
		t.Errorf("model defaults = %+v", m)
	}
	if want := (Snapshots{Enabled: true, MaxFileBytes: 2 << 20, MaxFiles: 100_000, KeepTurns: 100}); c.Snapshots != want {
		t.Errorf("snapshots = %+v, want %+v", c.Snapshots, want)
	}
	c, err = Load(writeConfig(t, "[snapshots]\nenabled = false\nmax_file_bytes = 1024\nmax_files = 10\nkeep_turns = 5\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Snapshots{MaxFileBytes: 1024, MaxFiles: 10, KeepTurns: 5}); c.Snapshots != want {
		t.Errorf("snapshots set = %+v, want %+v", c.Snapshots, want)
	}
}

func TestLoadMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	c, err := Load(path, false)
	if err != nil {
		t.Fatalf("Load(defaulted, missing) = %v, want the first-run config", err)
	}
	if c.File != path || len(c.Models) != 0 || c.MaxPreludeBytes != DefaultMaxPreludeBytes {
		t.Errorf("Load(defaulted, missing) = %+v", c)
	}
	var empty *EmptyCatalogError
	if _, err := c.DefaultModel(""); !errors.As(err, &empty) {
		t.Errorf("DefaultModel on a first run = %v, want *EmptyCatalogError", err)
	}

	_, err = Load(path, true)
	if err == nil || !strings.Contains(err.Error(), path) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(named, missing) = %v, want a not-exist error naming %s", err, path)
	}
}

func TestLoadUnreadable(t *testing.T) {
	// A directory cannot be read as a file, whoever runs the test.
	if _, err := Load(t.TempDir(), false); err == nil {
		t.Error("Load(directory) = nil error, want one")
	}
}

func TestDefaultModel(t *testing.T) {
	const gw = "[gateways.g]\nprotocol = \"anthropic-messages\"\nbase_url = \"https://h\"\n"
	const two = gw + "[models.a]\ngateway = \"g\"\ncontext_window = 1\n[models.b]\ngateway = \"g\"\ncontext_window = 1\n"
	for _, tt := range []struct {
		name, src, flag string
		want            string
		wantErr         string
	}{
		{"flag", two, "b", "b", ""},
		{"flag beats config", "model = \"a\"\n" + two, "b", "b", ""},
		{"config", "model = \"b\"\n" + two, "", "b", ""},
		{"sole entry", gw + "[models.only]\ngateway = \"g\"\ncontext_window = 1\n", "", "only", ""},
		{"ambiguous", two, "", "", "no default model: set model in the config or pass --model; configured models: a, b"},
		{"unknown flag", two, "c", "", `unknown model "c"; configured models: a, b`},
		{"empty catalog", gw, "a", "", "no models are configured"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.src)
			c, err := Load(path, true)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.DefaultModel(tt.flag)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DefaultModel(%q) = %q, %v; want an error naming %s and containing %q", tt.flag, got, err, path, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("DefaultModel(%q) = %q, %v; want %q", tt.flag, got, err, tt.want)
			}
		})
	}
}

func TestResolveUnknown(t *testing.T) {
	c, err := Load(writeConfig(t, catalog), true)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Resolve("gpt")
	want := `unknown model "gpt"; configured models: claude-haiku-4-5, claude-opus-4-8, grok-4.5-build, kimi-k3, local-qwen`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Resolve(gpt) = %v, want %s", err, want)
	}
}

// The entry an empty catalog suggests is itself a valid config: pasting it works.
func TestEmptyCatalogError(t *testing.T) {
	path := writeConfig(t, "model = \"x\"\n")
	c, err := Load(path, true)
	if err != nil {
		t.Fatalf("Load(no models) = %v; an empty catalog fails only when a model is needed", err)
	}
	_, err = c.DefaultModel("")
	var empty *EmptyCatalogError
	if !errors.As(err, &empty) || empty.File != path {
		t.Fatalf("DefaultModel = %v, want *EmptyCatalogError for %s", err, path)
	}
	if !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), ExampleEntry) {
		t.Errorf("EmptyCatalogError = %q, want it to name the file and carry the example", err)
	}
	if err := os.WriteFile(path, []byte(ExampleEntry), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Load(path, true)
	if err != nil {
		t.Fatalf("Load(ExampleEntry): %v", err)
	}
	if key, err := c.DefaultModel(""); err != nil || key != "claude-opus-4-8" {
		t.Errorf("DefaultModel after pasting = %q, %v", key, err)
	}
}

// A credential that cannot be looked up fails when the model is used, not at Load.
func TestLoadDoesNotLookUpCredentials(t *testing.T) {
	src := "[models.m]\nprotocol = \"openai-responses\"\nbase_url = \"https://h\"\ncontext_window = 1\nauth = { source = \"env\", var_name = \"NO_SUCH_TEST_KEY\" }\n" +
		"[models.f]\nprotocol = \"openai-responses\"\nbase_url = \"https://h\"\ncontext_window = 1\nauth = { source = \"file\", path = \"/nonexistent/key\" }\n"
	c, err := Load(writeConfig(t, src), true)
	if err != nil {
		t.Fatalf("Load = %v, want success with unresolvable credentials", err)
	}
	for key, want := range map[string]string{"m": "NO_SUCH_TEST_KEY", "f": "/nonexistent/key"} {
		m, err := c.Resolve(key)
		if err != nil {
			t.Fatalf("Resolve(%q) = %v", key, err)
		}
		if _, err := m.Auth.Key(fakeEnv{}.lookup, "/h"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Auth.Key for %q = %v, want an error naming %s", key, err, want)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tt := range []struct {
		e    Error
		want string
	}{
		{Error{File: "c.toml", Line: 3, Key: "models.m.thinking", Msg: "bad"}, "c.toml:3: models.m.thinking: bad"},
		{Error{File: "c.toml", Key: "model", Msg: "bad"}, "c.toml: model: bad"},
		{Error{File: "c.toml", Line: 2, Msg: "bad"}, "c.toml:2: bad"},
		{Error{File: "c.toml", Err: errors.New("boom")}, "c.toml: boom"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// The config chooses where the user's credentials go, so a config file another user
// could have written is refused, named by --config or not, and a symlink to it that
// another user owns too.
func TestLoadUntrusted(t *testing.T) {
	const src = "[gateways.g]\nprotocol = \"anthropic-messages\"\nbase_url = \"https://h\"\nauth = { source = \"env\", var_name = \"K\" }\n"
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, path string) string // returns the path to load
		want  []string                               // substrings of the error; none means success
	}{
		{"private", func(t *testing.T, path string) string { return path }, nil},
		{"readable by others", func(t *testing.T, path string) string { chmod(t, path, 0o644); return path }, nil},
		{"group-writable", func(t *testing.T, path string) string { chmod(t, path, 0o664); return path }, []string{
			"refusing the config file $F (owner " + Who(os.Getuid()) + ", mode -rw-rw-r--): group or others may write to it",
			"run: chmod go-w $F"}},
		{"world-writable", func(t *testing.T, path string) string { chmod(t, path, 0o646); return path }, []string{"mode -rw-r--rw-", "chmod go-w $F"}},
		{"my symlink to a writable file", func(t *testing.T, path string) string {
			chmod(t, path, 0o666)
			link := path + ".link"
			if err := os.Symlink(path, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, []string{"refusing the config file $F.link (owner", "mode -rw-rw-rw-", "chmod go-w $F.link"}},
		{"another user's", func(t *testing.T, path string) string { giveAway(t, path, false); return path }, []string{
			"refusing the config file $F (owner " + Who(otherUID()) + ", mode -rw-------): it belongs to another user",
			"run: sudo chown " + userArg(os.Getuid()) + " $F"}},
		{"another user's symlink", func(t *testing.T, path string) string {
			link := path + ".link"
			if err := os.Symlink(path, link); err != nil {
				t.Fatal(err)
			}
			giveAway(t, link, true)
			return link
		}, []string{"refusing the config file $F.link: it is a symlink owned by " + Who(otherUID()), "sudo chown -h"}},
	} {
		for _, named := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/named=%v", tt.name, named), func(t *testing.T) {
				path := writeConfig(t, src)
				load := tt.setup(t, path)
				c, err := Load(load, named)
				if tt.want == nil {
					if err != nil || len(c.Warnings) != 0 {
						t.Fatalf("Load = %v, %v; want success without warnings", err, c.Warnings)
					}
					return
				}
				for _, w := range tt.want {
					if w = strings.ReplaceAll(w, "$F", path); err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("Load = %v\nwant an error containing %q", err, w)
					}
				}
			})
		}
	}
}

// An inline credential in a file others can read loads, with a warning that says how to
// make it private.
func TestLoadInlineCredentialReadable(t *testing.T) {
	const gw = "[gateways.g]\nprotocol = \"anthropic-messages\"\nbase_url = \"https://h\"\n"
	for _, tt := range []struct {
		name string
		src  string
		mode os.FileMode
		want string // the warning; empty means none
	}{
		{"gateway, readable", gw + "auth = \"sk-x\"\n", 0o644, "$F:4: gateways.g.auth: an inline credential in a file that group or others may read (mode -rw-r--r--); run: chmod 600 $F"},
		{"model, group-readable", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\nauth = \"sk-x\"\n", 0o640, "$F:7: models.m.auth: an inline credential"},
		{"private", gw + "auth = \"sk-x\"\n", 0o600, ""},
		{"env source, readable", gw + "auth = { source = \"env\", var_name = \"K\" }\n", 0o644, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.src)
			chmod(t, path, tt.mode)
			c, err := Load(path, true)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if len(c.Warnings) != 0 {
					t.Errorf("Load warnings = %v, want none", c.Warnings)
				}
				return
			}
			want := strings.ReplaceAll(tt.want, "$F", path)
			if len(c.Warnings) != 1 || !strings.HasPrefix(c.Warnings[0].String(), want) {
				t.Errorf("Load warnings = %v, want one starting %q", c.Warnings, want)
			}
			if strings.Contains(fmt.Sprint(c.Warnings), "sk-x") {
				t.Errorf("the warning %v reveals the credential", c.Warnings)
			}
		})
	}
}

// chmod sets exactly perm on path, whatever the umask.
func chmod(t *testing.T, path string, perm os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

// TestLoadNotRegular (issue 28): a FIFO or a directory as the config file is an error that
// names the file and says what it is; the FIFO is opened without blocking.
func TestLoadNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo, sub := filepath.Join(dir, "fifo.toml"), filepath.Join(dir, "dir.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for path, what := range map[string]string{fifo: "a FIFO (named pipe)", sub: "a directory"} {
		done := make(chan error, 1)
		go func() { _, err := Load(path, true); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), what) {
				t.Errorf("Load(%s) = %v, want an error naming it and saying it is %s", path, err, what)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) blocked", path)
		}
	}
}

// TestLoadPrices pins how prices are inherited: a gateway's are every model's on it, a
// model's prices table overrides them field by field, cache prices default to the input
// price, and a model with none has nil prices (its cost is unknown, never 0).
func TestLoadPrices(t *testing.T) {
	path := writeConfig(t, `max_cost = 2.5
[gateways.g]
protocol = "anthropic-messages"
base_url = "https://h"
prices = { input = 3, output = 15, cache_read = 0.3, cache_write = 3.75 }
[gateways.free]
protocol = "openai-responses"
base_url = "https://f"
[models.inherits]
gateway = "g"
context_window = 1000
[models.overrides]
gateway = "g"
context_window = 1000
prices = { output = 10.5 }
[models.own]
gateway = "free"
context_window = 1000
[models.own.prices]
input = 1
output = 2
[models.none]
gateway = "free"
context_window = 1000
`)
	c, err := Load(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxCost != 2.5 {
		t.Errorf("MaxCost = %g, want 2.5", c.MaxCost)
	}
	for _, tt := range []struct {
		key  string
		want *[4]float64
	}{
		{"inherits", &[4]float64{3, 15, 0.3, 3.75}},
		{"overrides", &[4]float64{3, 10.5, 0.3, 3.75}},
		{"own", &[4]float64{1, 2, 1, 1}},
		{"none", nil},
	} {
		p := c.Models[tt.key].Prices
		switch {
		case p == nil && tt.want == nil:
		case p == nil || tt.want == nil:
			t.Errorf("models.%s prices = %+v, want %v", tt.key, p, tt.want)
		case [4]float64{p.Input, p.Output, p.CacheRead, p.CacheWrite} != *tt.want:
			t.Errorf("models.%s prices = %+v, want %v", tt.key, *p, *tt.want)
		}
	}
}
