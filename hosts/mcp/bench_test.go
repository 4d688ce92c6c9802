package mcp

import (
	"log/slog"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkEcho measures an echo round trip to server-everything over stdio through a
// Tool and through a bare SDK client of another process of the same server, alternating
// the two, and reports the ratio of their medians: the goal is under 2.
func BenchmarkEcho(b *testing.B) {
	bin := npmServer(b, "mcp-server-everything")
	quiet := slog.New(slog.NewTextHandler(b.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := newSet(b, Options{Servers: []Server{{Name: "everything", Command: bin}}, Log: quiet})
	s.Discover(b.Context())
	echo := tool(b, s, "mcp__everything__echo")

	client := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	cs, err := client.Connect(b.Context(), &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()

	viaTool := func() {
		if res := echo.Call(b.Context(), "bench", []byte(`{"message":"ping"}`)); res.IsError || res.Text != "Echo: ping" {
			b.Fatalf("echo through the tool = %+v", res)
		}
	}
	bare := func() {
		r, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "ping"}})
		if err != nil || r.IsError {
			b.Fatalf("echo through the bare client = %+v, %v", r, err)
		}
	}
	for range 20 { // warm up both processes (JIT) and both paths
		viaTool()
		bare()
	}
	const n = 300
	var tool, direct []time.Duration
	for range n {
		start := time.Now()
		viaTool()
		tool = append(tool, time.Since(start))
		start = time.Now()
		bare()
		direct = append(direct, time.Since(start))
	}
	for b.Loop() {
	}
	slices.Sort(tool)
	slices.Sort(direct)
	b.ReportMetric(float64(tool[n/2].Microseconds()), "µs/echo-tool")
	b.ReportMetric(float64(direct[n/2].Microseconds()), "µs/echo-bare")
	b.ReportMetric(float64(tool[n/2])/float64(direct[n/2]), "x-echo")
}
