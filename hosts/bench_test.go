package hosts

import (
	"encoding/json"
	"os/exec"
	"slices"
	"testing"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"myco.dev/agent/model"
	"myco.dev/hosts/mcp"
	"myco.dev/hosts/mcp/mcptest"
	"myco.dev/hosts/proto"
	"myco.dev/internal/sshdtest"
)

// BenchmarkMCPEcho measures an echo round trip to server-everything over stdio through the
// harness, as a session's tool call makes it (Executor.Call: routing, the Set, the
// instance, the result's checks), and through a bare go-sdk client of another process of
// the same server, alternating the two, and reports the ratio of their medians: the goal
// is under 2. The same round trip to the server on a remote host (the real binary in
// --mode host behind a stand-in ssh, its daemon running the server) is reported too.
func BenchmarkMCPEcho(b *testing.B) {
	bin := mcptest.NPMServer(b, "mcp-server-everything")
	quiet := testLog(b)
	set, err := mcp.New(mcp.Options{Servers: []mcp.Server{{Name: "everything", Command: bin, Args: []string{"stdio"}}}, Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer set.Close()
	o := RemoteOptions{SSH: fakeSSHPath(b), MaxImageBase64Bytes: 1 << 20, AttachTimeout: 30 * time.Second, Hello: proto.Hello{Version: "bench"}, Log: quiet}
	h, err := NewHarness(Options{MCP: set, Log: quiet, Remotes: []RemoteSpec{{Alias: "devbox", Command: []string{mycoBin, "--host-dir", sshdtest.NewDaemonDir(b)}}}, Remote: o,
		RemoteMCP: []RemoteMCP{{Host: "devbox", Server: proto.MCPServer{Name: "remote", Command: bin, Args: []string{"stdio"}, StartupTimeoutMS: 30000}}}})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	h.Discover(b.Context())
	ex := h.For("bench")
	defer h.Release("bench")

	client := gomcp.NewClient(&gomcp.Implementation{Name: "bare", Version: "1"}, nil)
	cs, err := client.Connect(b.Context(), &gomcp.CommandTransport{Command: exec.Command(bin, "stdio")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()

	call := func(tool, want string) func() {
		return func() {
			res := ex.Call(b.Context(), model.ToolCall{ID: "c", Name: tool, Input: json.RawMessage(`{"message":"ping"}`)})
			if res.IsError || res.Text != want {
				b.Fatalf("%s = %+v", tool, res)
			}
		}
	}
	harness, remote := call("mcp__everything__echo", "Echo: ping"), call("mcp__remote__echo", "Echo: ping")
	bare := func() {
		r, err := cs.CallTool(b.Context(), &gomcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "ping"}})
		if err != nil || r.IsError {
			b.Fatalf("echo through the bare client = %+v, %v", r, err)
		}
	}
	for range 20 { // warm up the processes (JIT) and every path
		harness()
		remote()
		bare()
	}
	const n = 300
	var viaHarness, viaRemote, direct []time.Duration
	timed := func(ds *[]time.Duration, f func()) {
		start := time.Now()
		f()
		*ds = append(*ds, time.Since(start))
	}
	for range n {
		timed(&viaHarness, harness)
		timed(&direct, bare)
		timed(&viaRemote, remote)
	}
	for b.Loop() {
	}
	median := func(ds []time.Duration) time.Duration { slices.Sort(ds); return ds[len(ds)/2] }
	mh, mr, md := median(viaHarness), median(viaRemote), median(direct)
	b.ReportMetric(float64(mh.Microseconds()), "µs/echo-harness")
	b.ReportMetric(float64(md.Microseconds()), "µs/echo-bare")
	b.ReportMetric(float64(mr.Microseconds()), "µs/echo-remote")
	b.ReportMetric(float64(mh)/float64(md), "x-echo-harness")
	b.ReportMetric(float64(mr)/float64(md), "x-echo-remote")
}
