package mcp

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"myco.dev/hosts/tools"
)

// The inventory lists the servers an owner started, running or ended (and how); a server
// it never called is left out, and so are the servers whose tools could not be listed
// (the Set's state, in Statuses).
func TestInventory(t *testing.T) {
	dir := t.TempDir()
	clk := newClock()
	s := newSet(t, Options{Now: clk.Now, Servers: []Server{
		fake(t, dir),
		{Name: "locked", Command: "true", Unavailable: "env GITHUB_TOKEN: the variable GITHUB_TOKEN is not set"},
		{Name: "nope", Command: "myco-no-such-mcp-server"},
	}})
	s.Discover(t.Context())
	inv := func(owner string) []tools.MCPServerInfo {
		var r tools.Resources
		s.Inventory(owner, &r)
		return r.MCP
	}
	var unavailable []tools.MCPServerInfo
	check := func(what string, got, want []tools.MCPServerInfo) {
		t.Helper()
		ok := len(got) == len(want)
		for i := range min(len(got), len(want)) {
			ok = ok && got[i].Server == want[i].Server && got[i].State == want[i].State &&
				(want[i].PID == 0 || got[i].PID == want[i].PID) && strings.HasPrefix(got[i].Why, want[i].Why) && !strings.Contains(got[i].Why, "\n")
		}
		if !ok {
			t.Errorf("%s: Inventory = %+v, want %+v", what, got, want)
		}
	}
	check("before any call", inv("o1"), unavailable)
	st := s.Statuses()
	if len(st) != 3 || st[1].Server != "locked" || st[1].Listed || !strings.Contains(st[1].Err, "GITHUB_TOKEN is not set") || !st[1].RetryAt.IsZero() {
		t.Errorf("Statuses() = %+v, want locked not listed, saying why", st)
	}

	pid, err := strconv.Atoi(call(t, s, "o1", "mcp__fake__pid", `{}`).Text)
	if err != nil {
		t.Fatal(err)
	}
	check("after a call", inv("o1"), append([]tools.MCPServerInfo{{Server: "fake", State: tools.MCPRunning, PID: pid}}, unavailable...))
	check("another owner", inv("o2"), unavailable)

	if res := call(t, s, "o1", "mcp__fake__crash", `{"marker":"`+filepath.Join(dir, "m")+`"}`); !res.Unknown {
		t.Fatalf("crash = %+v", res)
	}
	check("after the crash", inv("o1"), append([]tools.MCPServerInfo{{Server: "fake", State: tools.MCPUnavailable,
		Why: "its process ended (exit status 3); its stderr ends: / fake: crashing on purpose"}}, unavailable...))
	if _, err := os.Stat(filepath.Join(dir, "m")); err != nil {
		t.Error(err)
	}
	s.Release("o1")
	check("after Release", inv("o1"), unavailable)
}

func TestUnlistedInfo(t *testing.T) {
	got := UnlistedInfo("db", "it did not start:\n  \"x\" is not found")
	if got.Server != "db" || got.State != tools.MCPUnavailable || got.Why != `its tools could not be listed: it did not start: / "x" is not found` {
		t.Errorf("UnlistedInfo = %+v", got)
	}
}

func TestOneLine(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"a\n\n  b  c\n", 100, "a / b c"},
		{"héllo", 2, "h…"},
		{"", 5, ""},
	} {
		if got := OneLine(tt.in, tt.max); got != tt.want {
			t.Errorf("OneLine(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}
