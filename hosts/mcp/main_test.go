package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"myco.dev/hosts/tools"
	"myco.dev/internal/needs"
)

// TestMain runs the test binary as the fake MCP server of fake_test.go when the Set
// starts it with MCPTEST_FAKE in its environment.
func TestMain(m *testing.M) {
	if os.Getenv("MCPTEST_FAKE") != "" {
		os.Exit(fakeServer())
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

// npmServer returns the path of an MCP server that npm ci installed into node_modules,
// with node to run it: the tests need both, and fail where CI is set without them.
func npmServer(t testing.TB, bin string) string {
	t.Helper()
	needs.Program(t, "node", "install Node.js 20 or later")
	p, err := filepath.Abs(filepath.Join("..", "..", "node_modules", ".bin", bin))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		needs.Missing(t, "%s is not installed: run npm ci (make assets) in the repository", bin)
	}
	return p
}

// everythingHTTP starts server-everything's streamable HTTP mode on a free loopback port
// and returns its endpoint. The server is killed when the test ends.
func everythingHTTP(t testing.TB) string {
	t.Helper()
	bin := npmServer(t, "mcp-server-everything")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		ok := false
		for sc.Scan() {
			if !ok && strings.Contains(sc.Text(), "listening on port") {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("server-everything streamableHttp exited before it listened")
		}
	case <-ctx.Done():
		t.Fatal("server-everything streamableHttp did not listen within 30 s")
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// fakeServer is the fake MCP server: the test binary speaking MCP over stdio with the
// SDK's server. Its tools do what the failure tests need.
func fakeServer() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	object := map[string]any{"type": "object"}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	args := func(req *mcp.CallToolRequest) map[string]string {
		var m map[string]string
		json.Unmarshal(req.Params.Arguments, &m)
		return m
	}
	add := func(name, desc string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: object}, h)
	}
	add("echo", "Echoes text.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(args(req)["text"]), nil
	})
	add("weird.name/x", "A name the providers refuse.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("weird"), nil
	})
	add("pid", "Says the server's process id.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(fmt.Sprint(os.Getpid())), nil
	})
	add("env", "Lists the server's environment.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(strings.Join(os.Environ(), "\n")), nil
	})
	add("crash", "Writes the marker file, then exits with status 3 in the middle of the call.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.WriteFile(args(req)["marker"], []byte("ran"), 0o600)
		fmt.Fprintln(os.Stderr, "fake: crashing on purpose")
		os.Exit(3)
		return nil, nil
	})
	add("block", "Blocks until cancelled, then records the cancellation in $MCPTEST_DIR/cancelled.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		os.WriteFile(filepath.Join(os.Getenv("MCPTEST_DIR"), "cancelled"), []byte("cancelled: "+context.Cause(ctx).Error()), 0o600)
		return nil, ctx.Err()
	})
	add("big", "Returns 300 KiB of text.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(strings.Repeat("0123456789abcdef", 300<<10/16)), nil
	})
	add("structured", "Returns structured content only.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"temperature": 21.5, "sky": "clear"}}, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return 1
	}
	return 0
}
