package hosts

import (
	"log/slog"
	"os"
	"testing"

	"myco.dev/hosts/mcp/mcptest"
	"myco.dev/internal/sshdtest"
)

// mycoBin is the real binary, built once for the suite: host tests run it in --mode host.
var mycoBin string

func TestMain(m *testing.M) {
	if os.Getenv(mcptest.FakeEnv) != "" {
		os.Exit(mcptest.Serve()) // a test started this binary as an MCP server
	}
	os.Exit(sshdtest.RunWithMyco(m, &mycoBin))
}

func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}
