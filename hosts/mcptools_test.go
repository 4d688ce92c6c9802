package hosts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/hosts/mcp"
	"myco.dev/hosts/mcp/mcptest"
	"myco.dev/hosts/proto"
	"myco.dev/hosts/tools"
	"myco.dev/internal/sshdtest"
)

// fakeMCP is the configuration of the fake MCP server (this test binary, see
// mcptest.Serve) named name, with scratch directory dir.
func fakeMCP(t *testing.T, name, dir string) proto.MCPServer {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return proto.MCPServer{Name: name, Command: exe, Env: map[string]string{mcptest.FakeEnv: "1", mcptest.FakeDirEnv: dir}}
}

func mcpSet(t *testing.T, servers ...mcp.Server) *mcp.Set {
	t.Helper()
	s, err := mcp.New(mcp.Options{Servers: servers, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func xcall(t *testing.T, ex *Executor, tool, input string) model.ToolResult {
	t.Helper()
	return ex.Call(t.Context(), model.ToolCall{ID: "c", Name: tool, Input: json.RawMessage(input)})
}

func specNames(specs []model.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// The local MCP servers' tools follow the host tools in the specs, without the host
// field, once discovered; calls reach each owner's own instance; a server whose tools
// could not be listed answers an error that says why, and is in every owner's inventory;
// Release ends an owner's instances.
func TestHarnessMCPLocal(t *testing.T) {
	f := fakeMCP(t, "fake", t.TempDir())
	set := mcpSet(t, mcp.Server{Name: f.Name, Command: f.Command, Env: f.Env}, mcp.Server{Name: "nope", Command: "myco-no-such-mcp-server"})
	h, err := NewHarness(Options{Tools: []tools.Tool{&echoTool{name: "bash"}}, MCP: set, MCPDisabled: []string{"off"}, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got := specNames(h.Specs()); !slices.Equal(got, []string{"bash"}) {
		t.Errorf("Specs before Discover = %v, want the host tools only", got)
	}
	if st := h.MCPStatuses(); len(st) != 3 || st[0].State != MCPPending || st[2].State != MCPDisabled || st[2].Server != "off" {
		t.Errorf("MCPStatuses before Discover = %+v", st)
	}
	h.Discover(t.Context())
	specs := h.Specs()
	names := specNames(specs)
	if names[0] != "bash" || !slices.Contains(names, "mcp__fake__echo") || !slices.IsSorted(names[1:]) || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "mcp__nope") }) {
		t.Errorf("Specs = %v, want bash, then the fake's tools in name order", names)
	}
	for _, s := range specs[1:] {
		if strings.Contains(string(s.Schema), `"host"`) {
			t.Errorf("%s has the host field: %s", s.Name, s.Schema)
		}
	}
	st := h.MCPStatuses()
	if st[0].Server != "fake" || st[0].State != MCPListed || st[0].Host != Local || len(st[0].Tools) == 0 ||
		st[1].Server != "nope" || st[1].State != MCPFailed || !strings.Contains(st[1].Err, "not found in the PATH") {
		t.Errorf("MCPStatuses = %+v", st)
	}

	ex := h.For("rt1")
	if res := xcall(t, ex, "mcp__fake__echo", `{"text":"hi"}`); res.IsError || res.Text != "hi" {
		t.Errorf("echo = %+v", res)
	}
	if res := xcall(t, ex, "mcp__fake__fail", `{"text":"it went wrong"}`); !res.IsError || res.Text != "it went wrong" {
		t.Errorf("a tool error (isError) = %+v, want the server's text as an error", res)
	}
	if res := xcall(t, ex, "mcp__nope__read", `{}`); !res.IsError || !strings.Contains(res.Text, "mcp server nope is not available: its tools could not be listed") {
		t.Errorf("a tool of the server that did not start = %+v", res)
	}
	if res := xcall(t, ex, "mcp__off__x", `{}`); !res.IsError || !strings.Contains(res.Text, "disabled") {
		t.Errorf("a tool of a disabled server = %+v", res)
	}
	pid := xcall(t, ex, "mcp__fake__pid", `{}`).Text
	inv := h.Inventory(t.Context(), "rt1")[0].Resources.MCP
	if len(inv) != 2 || inv[0].Server != "fake" || inv[0].State != tools.MCPRunning || fmt.Sprint(inv[0].PID) != pid ||
		inv[1].Server != "nope" || inv[1].State != tools.MCPUnavailable || !strings.Contains(inv[1].Why, "its tools could not be listed") {
		t.Errorf("inventory = %+v, want fake running as %s and nope unavailable", inv, pid)
	}
	h.Release("rt1")
	if inv := h.Inventory(t.Context(), "rt1")[0].Resources.MCP; len(inv) != 1 || inv[0].Server != "nope" {
		t.Errorf("inventory after Release = %+v, want only the unavailable server", inv)
	}
}

// remoteMCPHarness returns a harness with no local tools and one remote, devbox, reached
// through spec (the real binary behind the fake ssh, by default), running servers there.
func remoteMCPHarness(t *testing.T, spec RemoteSpec, o RemoteOptions, servers ...proto.MCPServer) *Harness {
	t.Helper()
	spec.Alias = "devbox"
	if spec.Command == nil {
		spec.Command = []string{mycoBin, "--host-dir", sshdtest.NewDaemonDir(t)}
	}
	var rm []RemoteMCP
	for _, s := range servers {
		rm = append(rm, RemoteMCP{Host: "devbox", Server: s})
	}
	h, err := NewHarness(Options{Remotes: []RemoteSpec{spec}, Remote: o, RemoteMCP: rm, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// MCP servers on a remote host: listed there over the protocol, called by exposed name,
// a crash mid-call an unknown outcome, in the owner's inventory of that host; a call in
// flight when the host daemon dies is an unknown outcome too.
func TestHarnessMCPRemote(t *testing.T) {
	dir := t.TempDir()
	h := remoteMCPHarness(t, RemoteSpec{}, testRemoteOptions(t), fakeMCP(t, "fake", dir), proto.MCPServer{Name: "nope", Command: "myco-no-such-mcp-server"})
	h.Discover(t.Context())
	st := h.MCPStatuses()
	if len(st) != 2 || st[0].State != MCPListed || st[0].Host != "devbox" || len(st[0].Tools) == 0 ||
		st[1].State != MCPFailed || !strings.Contains(st[1].Err, `host devbox: "myco-no-such-mcp-server" is not found`) {
		t.Fatalf("MCPStatuses = %+v", st)
	}
	if names := specNames(h.Specs()); !slices.Contains(names, "mcp__fake__echo") || !slices.IsSorted(names) {
		t.Errorf("Specs = %v", names)
	}
	ex := h.For("rt1")
	if res := xcall(t, ex, "mcp__fake__echo", `{"text":"from devbox"}`); res.IsError || res.Text != "from devbox" {
		t.Errorf("echo = %+v", res)
	}
	if res := xcall(t, ex, "mcp__fake__fail", `{"text":"bad"}`); !res.IsError || res.Text != "host devbox: bad" {
		t.Errorf("a tool error = %+v", res)
	}
	pid := xcall(t, ex, "mcp__fake__pid", `{}`).Text
	inv := h.Inventory(t.Context(), "rt1")
	if len(inv) != 2 || len(inv[0].Resources.MCP) != 0 {
		t.Fatalf("inventory = %+v", inv)
	}
	if got := inv[1].Resources.MCP; len(got) != 2 || got[0].Server != "fake" || got[0].State != tools.MCPRunning || fmt.Sprint(got[0].PID) != pid ||
		got[1].Server != "nope" || got[1].State != tools.MCPUnavailable {
		t.Errorf("devbox's inventory = %+v, want fake running as %s and nope unavailable", got, pid)
	}
	marker := filepath.Join(dir, "marker")
	res := xcall(t, ex, "mcp__fake__crash", `{"marker":"`+marker+`"}`)
	if !res.Unknown || !strings.HasPrefix(res.Text, "host devbox: mcp server fake ended while this call was in flight") || !strings.Contains(res.Text, "exit status 3") {
		t.Errorf("the call the server crashed in = %+v, want an unknown outcome", res)
	}

	// The host daemon dies during a call: unknown, and a new daemon serves the next call.
	var wg sync.WaitGroup
	var inFlight model.ToolResult
	wg.Go(func() { inFlight = xcall(t, h.For("rt2"), "mcp__fake__block", `{}`) })
	daemonDir := h.Remote("devbox").spec.Command[2] // mycoBin --host-dir DIR
	sshdtest.WaitFor(t, 10*time.Second, "the blocking call reached the server", func() bool {
		var r tools.Resources
		for _, i := range h.Inventory(t.Context(), "rt2") {
			if i.Host == "devbox" {
				r = i.Resources
			}
		}
		return len(r.MCP) > 0 && r.MCP[0].State == tools.MCPRunning
	})
	pids := sshdtest.DaemonPIDs(daemonDir)
	if len(pids) != 1 {
		t.Fatalf("host daemons = %v, want one", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !inFlight.Unknown || !strings.Contains(inFlight.Text, "the host daemon that ran it is gone") {
		t.Errorf("the call in flight when the daemon died = %+v, want an unknown outcome", inFlight)
	}
	if res := xcall(t, h.For("rt3"), "mcp__fake__echo", `{"text":"again"}`); res.IsError || res.Text != "again" {
		t.Errorf("echo on the new daemon = %+v", res)
	}
}

// A host that speaks an older protocol cannot run MCP servers: the listing fails with the
// mismatch, which the status, the inventory and a call of the server's tools say.
func TestHarnessMCPOldHost(t *testing.T) {
	old := fmt.Sprintf(`echo '{"hello":{"protocol":%d,"version":"0.0.9"}}'; exec cat >/dev/null`, proto.Version-1)
	h := remoteMCPHarness(t, RemoteSpec{Command: []string{"sh", "-c", old}}, testRemoteOptions(t), fakeMCP(t, "fake", t.TempDir()))
	h.Discover(t.Context())
	want := fmt.Sprintf("host protocol mismatch: the controller's myco test-1.0 speaks host protocol %d, the host's myco 0.0.9 speaks %d", proto.Version, proto.Version-1)
	st := h.MCPStatuses()
	if len(st) != 1 || st[0].State != MCPFailed || !strings.Contains(st[0].Err, want) {
		t.Errorf("MCPStatuses = %+v, want the mismatch", st)
	}
	if res := xcall(t, h.For("rt1"), "mcp__fake__echo", `{}`); !res.IsError || !strings.Contains(res.Text, "mcp server fake is not available") || !strings.Contains(res.Text, want) {
		t.Errorf("a call = %+v, want an error naming the mismatch", res)
	}
	if res := h.Remote("devbox").CallMCP(t.Context(), "rt1", fakeMCP(t, "fake", t.TempDir()), "mcp__fake__echo", json.RawMessage(`{}`)); !res.IsError || !strings.Contains(res.Text, want) {
		t.Errorf("CallMCP = %+v, want an error naming the mismatch", res)
	}
	inv := h.Inventory(t.Context(), "rt1")[1].Resources.MCP
	if len(inv) != 1 || !strings.Contains(inv[0].Why, "host protocol mismatch") {
		t.Errorf("inventory = %+v", inv)
	}
}

// A host that lists tools that are not its server's (a name of another tool) has them
// left out, and a bad schema replaced.
func TestHarnessMCPRemoteToolsChecked(t *testing.T) {
	h := &Harness{log: testLog(t)}
	s := &remoteMCPServer{r: &Remote{spec: RemoteSpec{Alias: "devbox"}}, cfg: proto.MCPServer{Name: "db"}}
	got := h.remoteTools(s, []proto.MCPTool{
		{Name: "bash", Description: "shadow"},
		{Name: "mcp__other__x"},
		{Name: "mcp__db__q", Description: "Query.", Schema: json.RawMessage(`{"type": "object", "properties": {}}`)},
		{Name: "mcp__db__bad", Schema: json.RawMessage(`[1]`)},
		{Name: "mcp__db__q"},
		{Name: "mcp__db__" + strings.Repeat("x", 60)},
	})
	var names []string
	for _, tl := range got {
		names = append(names, tl.name+" "+string(tl.spec.Schema))
	}
	if want := []string{`mcp__db__bad {"type":"object","properties":{}}`, `mcp__db__q {"type":"object","properties":{}}`}; !slices.Equal(names, want) {
		t.Errorf("remoteTools = %q, want %q", names, want)
	}
}

// A remote server that cannot start at all (a credential that could not be looked up) is
// failed from the start, with its reason, and its host is not attached to list it.
func TestHarnessMCPRemoteUnavailable(t *testing.T) {
	h, err := NewHarness(Options{Remotes: []RemoteSpec{{Alias: "devbox", Command: []string{"false"}}}, Remote: testRemoteOptions(t), Log: testLog(t),
		RemoteMCP: []RemoteMCP{{Host: "devbox", Server: proto.MCPServer{Name: "db", Command: "pg-mcp"}, Unavailable: "env PGPASSWORD: not set"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.Discover(t.Context())
	if st := h.MCPStatuses(); len(st) != 1 || st[0].State != MCPFailed || st[0].Err != "env PGPASSWORD: not set" {
		t.Errorf("MCPStatuses = %+v", st)
	}
	if st := h.Remote("devbox").Status(); st.State != StateLazy {
		t.Errorf("devbox = %+v, want it never attached", st)
	}
	if _, err := NewHarness(Options{RemoteMCP: []RemoteMCP{{Host: "nohost", Server: proto.MCPServer{Name: "db"}}}}); err == nil || !strings.Contains(err.Error(), `unknown host "nohost"`) {
		t.Errorf("NewHarness with a server on an unknown host = %v", err)
	}
}

// A server whose tools could not be listed is started again on the next use of one of its
// tools once its backoff has passed: the call lists it and runs.
func TestHarnessMCPRetryOnUse(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	set, err := mcp.New(mcp.Options{Log: testLog(t), InitialBackoff: 50 * time.Millisecond, Servers: []mcp.Server{
		{Name: "late", Command: "fake-mcp", Env: map[string]string{"PATH": bin, mcptest.FakeEnv: "1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	h, err := NewHarness(Options{MCP: set, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.Discover(t.Context())
	st := h.MCPStatuses()
	if st[0].State != MCPFailed {
		t.Fatalf("MCPStatuses = %+v, want late failed", st)
	}
	if res := xcall(t, h.For("rt1"), "mcp__late__echo", `{"text":"x"}`); !res.IsError || !strings.Contains(res.Text, "not available") {
		t.Errorf("a call during the backoff = %+v", res)
	}
	if err := os.Symlink(exe, filepath.Join(bin, "fake-mcp")); err != nil {
		t.Fatal(err)
	}
	sshdtest.WaitFor(t, 5*time.Second, "the backoff passed", func() bool { return time.Now().After(h.MCPStatuses()[0].RetryAt) })
	if res := xcall(t, h.For("rt1"), "mcp__late__echo", `{"text":"started on use"}`); res.IsError || res.Text != "started on use" {
		t.Errorf("a call after the backoff = %+v, want the server started and its answer", res)
	}
	if st := h.MCPStatuses(); st[0].State != MCPListed || !slices.Contains(specNames(h.Specs()), "mcp__late__echo") {
		t.Errorf("after the call: %+v, specs %v", st, specNames(h.Specs()))
	}
}
