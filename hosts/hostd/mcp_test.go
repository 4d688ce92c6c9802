package hostd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"myco.dev/hosts/mcp/mcptest"
	"myco.dev/hosts/proto"
	"myco.dev/hosts/tools"
	"myco.dev/internal/sshdtest"
)

// fakeMCP is the configuration of the fake MCP server (this test binary), with scratch
// directory dir.
func fakeMCP(t *testing.T, dir string) proto.MCPServer {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return proto.MCPServer{Name: "fake", Command: exe, Env: map[string]string{mcptest.FakeEnv: "1", mcptest.FakeDirEnv: dir}}
}

func mcpFrame(id uint64, owner string, s proto.MCPServer, tool, input string) proto.Msg {
	return proto.Msg{ID: id, Call: &proto.Call{Owner: owner, Tool: tool, Input: json.RawMessage(input), Key: "k" + strconv.FormatUint(id, 10), MCP: &s}}
}

func inventoryOf(t *testing.T, c *pipeConn, id uint64, owner string) tools.Resources {
	t.Helper()
	c.send(t, proto.Msg{ID: id, Inventory: &proto.InventoryQuery{Owner: owner}})
	m := c.read(t)
	if m.Resources == nil {
		t.Fatalf("inventory = %+v", m)
	}
	var r tools.Resources
	if err := json.Unmarshal(*m.Resources, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDaemonMCP: the daemon lists the tools of the MCP servers a controller sends (one
// that starts, one whose command is missing), runs calls by exposed name on each owner's
// own instance, reports a crash in the middle of a call as an unknown outcome, lists an
// owner's servers in its inventory, and ends them on release.
func TestDaemonMCP(t *testing.T) {
	d := NewDaemon(Options{Log: testLog(t), MCP: MCPOptions{Env: os.Environ()}})
	t.Cleanup(d.Close)
	c := connect(t, d)
	dir := t.TempDir()
	fake := fakeMCP(t, dir)
	missing := proto.MCPServer{Name: "nope", Command: "myco-no-such-mcp-server"}

	c.send(t, proto.Msg{ID: 1, MCPList: &proto.MCPList{Servers: []proto.MCPServer{fake, missing}}})
	m := c.read(t)
	if m.ID != 1 || m.MCPTools == nil || len(m.MCPTools.Servers) != 2 {
		t.Fatalf("mcp_list = %+v", m)
	}
	listed, failed := m.MCPTools.Servers[0], m.MCPTools.Servers[1]
	var names []string
	for _, tl := range listed.Tools {
		names = append(names, tl.Name)
		if tl.Name == "mcp__fake__echo" && (tl.Remote != "echo" || tl.Description != "Echoes text." || !strings.Contains(string(tl.Schema), `"type":"object"`)) {
			t.Errorf("echo = %+v", tl)
		}
	}
	if listed.Name != "fake" || listed.Err != "" || !strings.Contains(strings.Join(names, " "), "mcp__fake__echo mcp__fake__env") {
		t.Errorf("the fake's listing = %+v", listed)
	}
	if failed.Name != "nope" || len(failed.Tools) != 0 || !strings.Contains(failed.Err, `"myco-no-such-mcp-server" is not found`) {
		t.Errorf("the missing server's listing = %+v", failed)
	}

	c.send(t, mcpFrame(2, "o1", fake, "mcp__fake__echo", `{"text":"over the protocol"}`))
	if m := c.read(t); m.Result == nil || m.Result.IsError || m.Result.Text != "over the protocol" {
		t.Fatalf("echo = %+v", m)
	}
	c.send(t, mcpFrame(3, "o1", fake, "mcp__fake__pid", `{}`))
	m = c.read(t)
	pid, err := strconv.Atoi(m.Result.Text)
	if err != nil {
		t.Fatalf("pid = %+v", m)
	}
	if inv := inventoryOf(t, c, 4, "o1"); len(inv.MCP) != 1 || inv.MCP[0] != (tools.MCPServerInfo{Server: "fake", State: tools.MCPRunning, PID: pid}) {
		t.Errorf("inventory = %+v, want fake running as %d", inv, pid)
	}
	c.send(t, mcpFrame(5, "o1", fake, "mcp__fake__nosuch", `{}`))
	if m := c.read(t); m.Result == nil || !m.Result.IsError || !strings.Contains(m.Result.Text, "has no tool mcp__fake__nosuch") {
		t.Errorf("a tool the server does not have = %+v", m)
	}
	c.send(t, mcpFrame(6, "o1", missing, "mcp__nope__x", `{}`))
	if m := c.read(t); m.Result == nil || !m.Result.IsError || !strings.Contains(m.Result.Text, "mcp server nope is not available: its tools could not be listed") {
		t.Errorf("a call of the missing server = %+v", m)
	}

	marker := filepath.Join(dir, "marker")
	c.send(t, mcpFrame(7, "o1", fake, "mcp__fake__crash", `{"marker":"`+marker+`"}`))
	if m := c.read(t); m.Result == nil || !m.Result.Unknown || !strings.Contains(m.Result.Text, "exit status 3") {
		t.Errorf("the call the server crashed in = %+v, want an unknown outcome", m)
	}
	if inv := inventoryOf(t, c, 8, "o1"); len(inv.MCP) != 1 || inv.MCP[0].State != tools.MCPUnavailable || !strings.Contains(inv.MCP[0].Why, "exit status 3") {
		t.Errorf("inventory after the crash = %+v", inv)
	}

	// Another owner gets its own instance; release ends it.
	c.send(t, mcpFrame(9, "o2", fake, "mcp__fake__pid", `{}`))
	m = c.read(t)
	pid2, err := strconv.Atoi(m.Result.Text)
	if err != nil || pid2 == pid {
		t.Fatalf("o2's pid = %+v, want a process of its own", m)
	}
	c.send(t, proto.Msg{ID: 10, Release: &proto.Release{Owner: "o2"}})
	if m := c.read(t); m.Released == nil {
		t.Fatalf("release = %+v", m)
	}
	sshdtest.WaitFor(t, 10*time.Second, "o2's server ended after its release", func() bool { return syscall.Kill(pid2, 0) != nil })
	if inv := inventoryOf(t, c, 11, "o2"); len(inv.MCP) != 0 {
		t.Errorf("o2's inventory after its release = %+v", inv)
	}
}

// TestDaemonMCPCallBeforeList: a daemon that never listed a server (it started after the
// controller listed them on another) lists it on its first call.
func TestDaemonMCPCallBeforeList(t *testing.T) {
	d := NewDaemon(Options{Log: testLog(t), MCP: MCPOptions{Env: os.Environ()}})
	t.Cleanup(d.Close)
	c := connect(t, d)
	c.send(t, mcpFrame(1, "o1", fakeMCP(t, t.TempDir()), "mcp__fake__echo", `{"text":"first"}`))
	if m := c.read(t); m.Result == nil || m.Result.Text != "first" {
		t.Fatalf("echo = %+v", m)
	}
}

func TestExpandHome(t *testing.T) {
	for _, tt := range []struct{ in, home, want string }{
		{"~/bin/x", "/h", "/h/bin/x"},
		{"~", "/h", "/h"},
		{"~x", "/h", "~x"},
		{"/abs", "/h", "/abs"},
		{"~/x", "", "~/x"},
	} {
		if got := expandHome(tt.in, tt.home); got != tt.want {
			t.Errorf("expandHome(%q, %q) = %q, want %q", tt.in, tt.home, got, tt.want)
		}
	}
}
