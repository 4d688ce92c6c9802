package hostd

import (
	"encoding/base64"
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
		os.Exit(mcptest.Serve()) // a daemon under test started this binary as an MCP server
	}
	os.Exit(sshdtest.RunWithMyco(m, &mycoBin))
}

func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// tinyPNG is a 1x1 PNG image.
var tinyPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
