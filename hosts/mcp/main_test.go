package mcp

import (
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"myco.dev/hosts/mcp/mcptest"
	"myco.dev/hosts/tools"
)

// TestMain runs the test binary as the fake MCP server (see [mcptest.Serve]) when the
// Set starts it with MCPTEST_FAKE in its environment.
func TestMain(m *testing.M) {
	if os.Getenv(mcptest.FakeEnv) != "" {
		os.Exit(mcptest.Serve())
	}
	os.Exit(m.Run())
}

func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// clock is a settable time for backoffs.
type clock struct {
	mu  sync.Mutex // guards now
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newSet returns a Set over servers, closed when the test ends.
func newSet(t testing.TB, o Options) *Set {
	t.Helper()
	if o.Log == nil {
		o.Log = testLog(t)
	}
	s, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// tool returns the tool of s named name.
func tool(t testing.TB, s *Set, name string) *Tool {
	t.Helper()
	var names []string
	for _, tl := range s.Tools() {
		if tl.Name() == name {
			return tl
		}
		names = append(names, tl.Name())
	}
	t.Fatalf("no tool %s; the tools are %v; statuses %+v", name, names, s.Statuses())
	return nil
}

// call calls the tool name of s for owner with input.
func call(t testing.TB, s *Set, owner, name, input string) tools.Result {
	t.Helper()
	return tool(t, s, name).Call(t.Context(), owner, json.RawMessage(input))
}

// wantText fails t unless res is a success whose text contains each of want.
func wantText(t testing.TB, what string, res tools.Result, want ...string) {
	t.Helper()
	if res.IsError || res.Unknown {
		t.Fatalf("%s = %+v, want a success", what, res)
	}
	for _, w := range want {
		if !strings.Contains(res.Text, w) {
			t.Errorf("%s = %q, want it to contain %q", what, res.Text, w)
		}
	}
}

// wantError fails t unless res is an error (not an unknown outcome) whose text contains
// each of want.
func wantError(t testing.TB, what string, res tools.Result, want ...string) {
	t.Helper()
	if !res.IsError || res.Unknown {
		t.Fatalf("%s = %+v, want an error", what, res)
	}
	for _, w := range want {
		if !strings.Contains(res.Text, w) {
			t.Errorf("%s = %q, want it to contain %q", what, res.Text, w)
		}
	}
}

// npmServer returns the path of an MCP server that npm ci installed (see
// [mcptest.NPMServer]).
func npmServer(t testing.TB, bin string) string {
	t.Helper()
	return mcptest.NPMServer(t, bin)
}

// everythingHTTP starts server-everything's streamable HTTP mode (see
// [mcptest.EverythingHTTP]).
func everythingHTTP(t testing.TB) string {
	t.Helper()
	return mcptest.EverythingHTTP(t)
}
