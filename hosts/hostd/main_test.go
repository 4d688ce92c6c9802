package hostd

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"myco.dev/hosts/mcp/mcptest"
	"myco.dev/internal/sshdtest"
)

// mycoBin is the real binary, built once for the suite: host tests run it in --mode host.
var mycoBin string

func TestMain(m *testing.M) {
	if os.Getenv(mcptest.FakeEnv) != "" {
		os.Exit(mcptest.Serve()) // a daemon under test started this binary as an MCP server
	}
	dir, err := os.MkdirTemp("", "myco-hostd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mycoBin = filepath.Join(dir, "myco")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	if out, err := exec.Command(goTool, "build", "-o", mycoBin, "myco.dev/cmd/myco").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build myco: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// waitFor polls cond until it holds or d passes. The processes under test are real, so
// the fake clock of testing/synctest cannot drive them.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		<-tick.C
	}
}

// daemonDir returns a private directory, short enough for a Unix socket path, for the
// host daemons of one test, and ends every daemon that runs there when the test ends.
func daemonDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sshdtest.StopDaemons(t, dir)
		os.RemoveAll(dir)
	})
	return dir
}

// tinyPNG is a 1x1 PNG image.
var tinyPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
