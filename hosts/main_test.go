package hosts

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mycoBin is the real binary, built once for the suite: host tests run it in --mode host.
var mycoBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "myco-hosts-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mycoBin = filepath.Join(dir, "myco")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	if out, err := exec.Command(goTool, "build", "-o", mycoBin, "myco/cmd/myco").CombinedOutput(); err != nil {
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

// gone reports whether pid has exited (a zombie no one reaps counts as exited).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) STATE ...
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
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
		stopDaemons(t, dir)
		os.RemoveAll(dir)
	})
	return dir
}

// stopDaemons sends SIGTERM to the daemons whose pid files are in dir (a daemon ends
// every process it started) and waits for them to go.
func stopDaemons(t testing.TB, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid <= 0 {
			continue
		}
		syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(5 * time.Second)
		for !gone(pid) {
			if time.Now().After(deadline) {
				t.Errorf("the host daemon %d did not end after SIGTERM", pid)
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
