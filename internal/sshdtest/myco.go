package sshdtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// RunWithMyco builds the real myco binary into a temporary directory, sets *bin to its
// path, runs the suite m and removes the binary; it returns the exit code for TestMain.
// The host suites run it in --mode host and as the host daemon.
func RunWithMyco(m *testing.M, bin *string) int {
	dir, err := os.MkdirTemp("", "myco-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, "myco")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	// Static, as make build makes it: myco hosts install copies only a binary that starts
	// on any Linux of its architecture.
	build := exec.Command(goTool, "build", "-o", *bin, "myco.dev/cmd/myco")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build myco: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// WaitFor polls cond until it holds or d passes. The processes under test are real, so
// the fake clock of testing/synctest cannot drive them.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
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

// NewDaemonDir returns a private directory, short enough for a Unix socket path, for the
// host daemons of one test, and ends every daemon that runs there when the test ends.
func NewDaemonDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		StopDaemons(t, dir)
		os.RemoveAll(dir)
	})
	return dir
}
