package reaper

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// driver is the built internal/reaperdriver, or "" when the build failed.
var driver string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "reaperdriver-")
	if err == nil {
		bin := filepath.Join(dir, "reaperdriver")
		if out, berr := exec.Command("go", "build", "-o", bin, "./internal/reaperdriver").CombinedOutput(); berr == nil {
			driver = bin
		} else {
			fmt.Fprintf(os.Stderr, "build reaperdriver: %v\n%s", berr, out)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func needDriver(t testing.TB) {
	t.Helper()
	if driver == "" {
		t.Fatal("the reaper driver did not build")
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	rest := stat[bytes.LastIndexByte(stat, ')')+1:] // the state follows the command name
	return !bytes.HasPrefix(bytes.TrimSpace(rest), []byte("Z"))
}

// poll calls f every 10 ms until it returns true, for at most 10 s.
func poll(t *testing.T, what string, f func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !f() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: still not the case after 10 s", what)
		}
	}
}

func waitGone(t *testing.T, name string, pid int) {
	t.Helper()
	poll(t, fmt.Sprintf("%s (pid %d) is gone", name, pid), func() bool { return !alive(pid) })
}

// waitPid polls for a pid file and returns its pid.
func waitPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	poll(t, path+" holds a pid", func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// waitTracked reads the driver's "tracked PGID" lines until it has seen every one of
// pgids, for at most 10 s.
func waitTracked(t *testing.T, stdout io.Reader, pgids ...int) {
	t.Helper()
	missing := make(chan int, 1)
	go func() {
		want := map[string]bool{}
		for _, p := range pgids {
			want["tracked "+strconv.Itoa(p)] = true
		}
		sc := bufio.NewScanner(stdout)
		for len(want) > 0 && sc.Scan() {
			delete(want, sc.Text())
		}
		missing <- len(want)
		io.Copy(io.Discard, stdout) // until the driver dies
	}()
	select {
	case n := <-missing:
		if n > 0 {
			t.Fatalf("the driver's output ended before it reported groups %v as tracked", pgids)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the driver did not report groups %v as tracked", pgids)
	}
}

// reaperPids returns the live processes whose arguments are "reaper TOKEN", as the tests
// start them.
func reaperPids(token string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		args := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
		if err == nil && len(args) == 3 && args[1] == "reaper" && args[2] == token && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// sleepGroup starts `sleep 300` as the leader of a new process group and returns its pid,
// which is the group's number. The test kills it at the end.
func sleepGroup(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait() // reaps it, so that a killed sleep does not linger as a zombie
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return cmd.Process.Pid
}

// TestToolProcessesDieWithMyco kills, with SIGKILL, a process whose bash tool runs
// `sleep 300` in an exec call and in a start session. With the reaper, the shells, the
// sleeps and the reaper itself are gone soon after, also when another process holds the
// reaper's pipe open so that it never reaches end of file (the parent-death signal does
// it then); without a reaper (the control case), the sleeps outlive the killed process.
func TestToolProcessesDieWithMyco(t *testing.T) {
	needDriver(t)
	for _, tt := range []struct {
		name                 string
		withReaper, holdPipe bool
	}{
		{"reaper", true, false},
		{"reaper whose pipe stays open", true, true},
		{"no reaper", false, false},
	} {
		withReaper := tt.withReaper
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(driver, "-dir", dir, "-reaper="+strconv.FormatBool(withReaper))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pids := map[string]int{}
			for _, name := range []string{"exec.bash", "exec.sleep", "start.bash", "start.sleep"} {
				pids[name] = waitPid(t, filepath.Join(dir, name))
				t.Cleanup(func() { syscall.Kill(pids[name], syscall.SIGKILL) })
			}
			if withReaper {
				waitTracked(t, stdout, pids["exec.bash"], pids["start.bash"])
			}
			reapers := reaperPids(dir)
			if withReaper && len(reapers) != 1 {
				t.Fatalf("reaper processes = %v, want one", reapers)
			}
			if tt.holdPipe {
				// Another process's write end: the pipe reaches end of file only when it
				// closes, and this one stays open until the test ends.
				held, err := os.OpenFile("/proc/"+strconv.Itoa(reapers[0])+"/fd/0", os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer held.Close()
			}
			cmd.Process.Kill()
			cmd.Wait()
			if !withReaper {
				for _, name := range []string{"exec.sleep", "start.sleep"} {
					if !alive(pids[name]) {
						t.Errorf("without a reaper, %s (pid %d) died with the driver; the test no longer shows what the reaper is for", name, pids[name])
					}
				}
				return
			}
			for name, pid := range pids {
				waitGone(t, name, pid)
			}
			waitGone(t, "the reaper", reapers[0])
			if t.Failed() {
				t.Logf("driver stderr:\n%s", stderr.String())
			}
		})
	}
}

// TestMain kills the registered groups at end of file, and nothing else: not an
// unregistered group, not everything (-1), not its own group, not on a garbled line.
func TestMainKillsRegisteredGroups(t *testing.T) {
	kept, killed, untracked := sleepGroup(t), sleepGroup(t), sleepGroup(t)
	pr, pw := io.Pipe()
	var out bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- Main(pr, &out) }()
	fmt.Fprintf(pw, "+%d\n+%d\n-%d\n", killed, untracked, untracked)
	fmt.Fprintf(pw, "+1\n+0\n+-%d\n++%d\n%d\n+%d\nnonsense\n+\n", kept, kept, kept, syscall.Getpgrp())
	pw.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("Main = %d, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Main did not return after end of file")
	}
	if out.String() != ready {
		t.Errorf("Main wrote %q, want %q", out.String(), ready)
	}
	waitGone(t, "the registered group", killed)
	for name, pid := range map[string]int{"the unregistered group": untracked, "the group named only in bad lines": kept} {
		if !alive(pid) {
			t.Errorf("%s (pid %d) was killed", name, pid)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		line string
		op   byte
		pgid int
	}{
		{"+42", '+', 42}, {"-42", '-', 42}, {"42", 0, 0}, {"++42", 0, 0}, {"+-42", 0, 0},
		{"+", 0, 0}, {"", 0, 0}, {"+4x", 0, 0}, {"*42", 0, 0},
	} {
		if op, pgid := parse(tt.line); op != tt.op || pgid != tt.pgid {
			t.Errorf("parse(%q) = %q, %d, want %q, %d", tt.line, op, pgid, tt.op, tt.pgid)
		}
	}
}

func newReaper(t *testing.T) (*Reaper, string) {
	t.Helper()
	needDriver(t)
	token := t.TempDir()
	r := New(Options{Argv: []string{driver, "reaper", token}, Log: slog.New(slog.NewTextHandler(t.Output(), nil))})
	t.Cleanup(func() { r.Close() })
	return r, token
}

func onlyReaper(t *testing.T, token string) int {
	t.Helper()
	var pids []int
	poll(t, "one reaper runs", func() bool { pids = reaperPids(token); return len(pids) == 1 })
	return pids[0]
}

// TestReaperIgnoresTerminalSignals sends the reaper what a terminal or a stray kill
// sends; it keeps running and keeps its groups until its pipe closes.
func TestReaperIgnoresTerminalSignals(t *testing.T) {
	r, token := newReaper(t)
	if r.Track(1) == nil {
		t.Fatal("Track(1) returned no untrack")
	}
	if pids := reaperPids(token); len(pids) != 0 {
		t.Fatalf("Track(1) started a reaper: %v", pids)
	}
	g := sleepGroup(t)
	r.Track(g)
	pid := onlyReaper(t, token)
	if pgid, _ := syscall.Getpgid(pid); pgid != pid {
		t.Errorf("the reaper's process group is %d, want its own (%d)", pgid, pid)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTERM} {
		syscall.Kill(pid, sig)
	}
	// A reaper that obeyed a signal would be gone, and its group with it, within this time.
	r.Track(sleepGroup(t)) // a write it must read, as a sign it is still at work
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range 50 {
		<-tick.C
		if !alive(pid) || !alive(g) {
			t.Fatalf("after SIGINT, SIGHUP, SIGQUIT and SIGTERM: reaper alive %v, group alive %v; want both alive", alive(pid), alive(g))
		}
	}
	r.Close()
	waitGone(t, "the tracked group", g)
	waitGone(t, "the reaper", pid)
}

// TestReaperUntrack: a group that ended and was untracked is not killed when the pipe
// closes.
func TestReaperUntrack(t *testing.T) {
	r, token := newReaper(t)
	gone, kept := sleepGroup(t), sleepGroup(t)
	r.Track(gone)
	untrack := r.Track(kept)
	untrack()
	untrack() // twice is harmless
	pid := onlyReaper(t, token)
	r.Close()
	waitGone(t, "the tracked group", gone)
	waitGone(t, "the reaper", pid)
	if !alive(kept) {
		t.Error("the untracked group was killed")
	}
	r.Track(sleepGroup(t))
	if pids := reaperPids(token); len(pids) != 0 {
		t.Errorf("Track after Close started a reaper: %v", pids)
	}
}

// TestReaperRestarts kills the reaper: another one starts and takes over the groups.
func TestReaperRestarts(t *testing.T) {
	r, token := newReaper(t)
	a := sleepGroup(t)
	r.Track(a)
	first := onlyReaper(t, token)
	syscall.Kill(first, syscall.SIGKILL)
	waitGone(t, "the first reaper", first)
	second := onlyReaper(t, token)
	if second == first {
		t.Fatalf("the reaper pid is still %d", first)
	}
	b := sleepGroup(t)
	r.Track(b)
	if pids := reaperPids(token); !slices.Equal(pids, []int{second}) {
		t.Errorf("reapers = %v, want only %d", pids, second)
	}
	r.Close()
	waitGone(t, "the group tracked before the restart", a)
	waitGone(t, "the group tracked after the restart", b)
}

// TestReaperStartFailure: a binary without the reaper mode is refused with a warning that
// says what to check, and the group is left alone.
func TestReaperStartFailure(t *testing.T) {
	var log bytes.Buffer
	r := New(Options{Argv: []string{"/bin/sh", "-c", "echo usage: nothing here"}, Log: slog.New(slog.NewTextHandler(&log, nil))})
	defer r.Close()
	g := sleepGroup(t)
	r.Track(g)()
	r.Track(sleepGroup(t)) // within the retry delay: no second attempt, no second warning
	if n := strings.Count(log.String(), "level=WARN"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, log.String())
	}
	for _, want := range []string{"tool processes may outlive this process", `wrote \"usage: nothing here\\n\" instead of \"reaper ready\\n\"`, "reaper mode"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
	if !alive(g) {
		t.Error("the group was killed")
	}
}

// TestReaperPrepare: Prepare starts the reaper before any group exists, and only once.
func TestReaperPrepare(t *testing.T) {
	r, token := newReaper(t)
	r.Prepare()
	pid := onlyReaper(t, token)
	r.Prepare()
	g := sleepGroup(t)
	r.Track(g)
	if pids := reaperPids(token); !slices.Equal(pids, []int{pid}) {
		t.Errorf("reapers after a second Prepare and a Track = %v, want only %d", pids, pid)
	}
	r.Close()
	waitGone(t, "the tracked group", g)
}

// TestReaperPath: Path names the binary and Argv[0] the name the reaper sees, as myco
// under testscript runs it.
func TestReaperPath(t *testing.T) {
	needDriver(t)
	token := t.TempDir()
	r := New(Options{Path: driver, Argv: []string{"myco", "reaper", token}, Log: slog.New(slog.NewTextHandler(t.Output(), nil))})
	defer r.Close()
	r.Prepare()
	pid := onlyReaper(t, token)
	raw, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if got := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00"); !slices.Equal(got, []string{"myco", "reaper", token}) {
		t.Errorf("the reaper's arguments = %q, want myco reaper %s", got, token)
	}
}
