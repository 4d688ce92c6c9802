// Package mcptest is test support for MCP servers as tools, like net/http/httptest: a
// fake MCP server that a test binary becomes ([Serve]) to play the failures no reference
// server plays (a crash in the middle of a call, a call that blocks until cancelled), and
// the reference servers that npm ci installs into the repository's node_modules
// ([NPMServer], [EverythingHTTP]).
//
// It imports the SDK and internal/needs only; it must not import myco.dev/hosts/mcp,
// whose own tests use it.
package mcptest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"myco.dev/internal/needs"
)

// FakeEnv is the environment variable that makes a test binary the fake server: its
// TestMain calls [Serve] when it is set. FakeDirEnv names the fake's scratch directory.
const (
	FakeEnv    = "MCPTEST_FAKE"
	FakeDirEnv = "MCPTEST_DIR"
)

// Serve runs the fake MCP server on stdin and stdout until its input ends and returns the
// exit status. Its tools:
//
//   - echo {text}: answers text.
//   - weird.name/x: a name the providers refuse, which myco maps; answers "weird".
//   - pid: answers the server's process id.
//   - env: lists the server's environment, one variable a line.
//   - crash {marker}: writes the marker file, says so on stderr, and exits with status 3
//     in the middle of the call.
//   - block: blocks until cancelled, then writes $MCPTEST_DIR/cancelled.
//   - big: answers 300 KiB of text.
//   - structured: answers structured content only.
//   - fail {text}: answers text as a tool error (isError).
func Serve() int {
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
		os.WriteFile(filepath.Join(os.Getenv(FakeDirEnv), "cancelled"), []byte("cancelled: "+context.Cause(ctx).Error()), 0o600)
		return nil, ctx.Err()
	})
	add("big", "Returns 300 KiB of text.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(strings.Repeat("0123456789abcdef", 300<<10/16)), nil
	})
	add("structured", "Returns structured content only.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"temperature": 21.5, "sky": "clear"}}, nil
	})
	add("fail", "Answers text as a tool error.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := text(args(req)["text"])
		r.IsError = true
		return r, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return 1
	}
	return 0
}

// Root returns the repository's root: the directory of go.mod above the working
// directory (a test's package directory).
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// NPMServer returns the absolute path of an MCP server that npm ci installed into the
// repository's node_modules/.bin, e.g. "mcp-server-everything", having checked that
// node, which runs it, is on PATH. Without either the test is skipped, and fails where
// CI is set.
func NPMServer(t testing.TB, bin string) string {
	t.Helper()
	needs.Program(t, "node", "install Node.js 20 or later")
	p := filepath.Join(Root(t), "node_modules", ".bin", bin)
	if _, err := os.Stat(p); err != nil {
		needs.Missing(t, "%s is not installed: run npm ci (make assets) in the repository", bin)
	}
	return p
}

// EverythingHTTP starts server-everything's streamable HTTP mode on a free loopback port
// and returns its endpoint. The server is killed when the test ends.
func EverythingHTTP(t testing.TB) string {
	t.Helper()
	bin := NPMServer(t, "mcp-server-everything")
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
