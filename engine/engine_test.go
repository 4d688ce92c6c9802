package engine

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"myco.dev/agent/model"
	"myco.dev/config"
	"myco.dev/sessions"
)

// profileAt resolves the default profile of a MYCO_HOME in a temporary directory, with
// config.toml holding cfg.
func profileAt(t *testing.T, cfg string) config.Paths {
	t.Helper()
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
	if err := os.MkdirAll(filepath.Dir(paths.ConfigFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths.ConfigFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return paths
}

func noEnv(string) (string, bool) { return "", false }

// TestOpen: a profile's start selects the launch model (--model, else the config's),
// lists the catalog's models in the config's order, reads the working directory's .env for
// the credentials the config names (and warns of the rest), and exports the manual.
func TestOpen(t *testing.T) {
	const cfg = `model = "b"

[models.a]
protocol = "anthropic-messages"
base_url = "http://127.0.0.1:1"
context_window = 1000
auth = { source = "env", var_name = "A_KEY" }

[models.b]
protocol = "openai-responses"
base_url = "http://127.0.0.1:2"
context_window = 2000
`
	paths := profileAt(t, cfg)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("A_KEY=from-dotenv\nOTHER=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	o := OpenOptions{Paths: paths, Dir: dir, LookupEnv: noEnv, Manual: fstest.MapFS{"index.md": {Data: []byte("# manual")}},
		Warn: func(s string) { warnings = append(warnings, s) }}
	p, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Model.Key != "b" {
		t.Errorf("the launch model = %q, want the config's b", p.Model.Key)
	}
	var keys []string
	for _, m := range p.Models() {
		keys = append(keys, m.Key)
	}
	if !slices.Equal(keys, []string{"a", "b"}) {
		t.Errorf("Models = %q, want a, b", keys)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "OTHER") {
		t.Errorf("warnings = %q, want one about .env's OTHER, which the config does not name", warnings)
	}
	if v, ok := p.Env.Lookup("A_KEY"); !ok || v != "from-dotenv" {
		t.Errorf("A_KEY = %q, %v; want it from .env", v, ok)
	}
	if b, err := os.ReadFile(filepath.Join(paths.ManualDir(), "index.md")); err != nil || string(b) != "# manual" {
		t.Errorf("the exported manual = %q, %v", b, err)
	}

	o.Model = "a"
	if p, err := Open(o); err != nil || p.Model.Key != "a" {
		t.Errorf("Open with --model a: %v, %v", p, err)
	}
	o.Model = "nope"
	if _, err := Open(o); err == nil {
		t.Error("Open with an unknown --model: no error")
	}
}

// TestDegraded: the service of a profile whose config is broken keeps its sessions and
// refuses a model, saying why.
func TestDegraded(t *testing.T) {
	paths := profileAt(t, "[models.m]\nprotocol = \"nope\"\n")
	_, cfgErr := Open(OpenOptions{Paths: paths, LookupEnv: noEnv, Manual: fstest.MapFS{}, Warn: func(string) {}})
	if cfgErr == nil {
		t.Fatal("Open of a broken config: no error")
	}
	m, err := Degraded(paths, t.TempDir(), cfgErr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	id, err := m.Create(t.Context(), sessions.CreateOptions{})
	if err == nil {
		var j *sessions.Job
		if j, err = m.Submit(t.Context(), id, model.TextPart("hi")); err == nil {
			_, err = j.Wait(t.Context())
		}
	}
	if err == nil || !strings.Contains(err.Error(), "the profile's config is invalid") || !errors.Is(err, cfgErr) {
		t.Errorf("a session of the degraded service = %v, want the config's error", err)
	}
}

// TestLazyAPI: the nested-session API's handler is built on the first request, once however
// many come at once, and a build that fails answers every request 503 with why.
func TestLazyAPI(t *testing.T) {
	var builds atomic.Int32
	h := lazyAPI(func() (http.Handler, error) {
		builds.Add(1)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") }), nil
	}, slog.New(slog.DiscardHandler))
	if builds.Load() != 0 {
		t.Fatal("the handler was built before any request")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
			if w.Body.String() != "served" {
				t.Errorf("answer %q, want the built handler's", w.Body.String())
			}
		})
	}
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Errorf("%d builds, want 1", n)
	}

	failed := lazyAPI(func() (http.Handler, error) { return nil, errors.New("no workspace") }, slog.New(slog.DiscardHandler))
	for range 2 {
		w := httptest.NewRecorder()
		failed.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), `"code": "unavailable"`) || !strings.Contains(w.Body.String(), "no workspace") {
			t.Errorf("a failed build answers %d %s, want 503 unavailable with why", w.Code, w.Body.String())
		}
	}
}
