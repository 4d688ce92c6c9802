package sandbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"myco.dev/hosts/sandbox"
)

// vias are the two ways a command is fenced in.
var vias = []struct {
	name string
	run  runFunc
}{{"wrap", run}, {"runner", runnerRun}}

// runners are the runners of runnerRun, one per test and spec, so that a test's commands
// share a helper as a session's do.
var runners sync.Map // test name + spec → *sandbox.Runner

// runnerRun runs script with bash through a Runner for spec.
func runnerRun(t *testing.T, f *sandbox.Fence, spec sandbox.Spec, dir, script string) (string, int) {
	t.Helper()
	key, _ := json.Marshal(spec)
	v, ok := runners.Load(t.Name() + string(key))
	if !ok {
		r, err := f.Runner(spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); runners.Delete(t.Name() + string(key)) })
		runners.Store(t.Name()+string(key), r)
		v = r
	}
	out, ws := runIn(t, v.(*sandbox.Runner), dir, script)
	return out, ws.ExitStatus()
}

// runIn runs script with bash through r and returns its output and wait status.
func runIn(t *testing.T, r *sandbox.Runner, dir, script string) (string, syscall.WaitStatus) {
	t.Helper()
	p, pr := startIn(t, t.Context(), r, dir, script)
	out, _ := io.ReadAll(pr)
	pr.Close()
	ws, err := p.Wait()
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return string(out), ws
}

// startIn starts script with bash through r, stdout and stderr on the pipe it returns.
func startIn(t *testing.T, ctx context.Context, r *sandbox.Runner, dir, script string) (*sandbox.Process, *os.File) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	p, err := r.Start(ctx, sandbox.Command{Path: "/bin/bash", Args: []string{"bash", "-c", script},
		Env: os.Environ(), Dir: dir, Files: []*os.File{nil, pw, pw}})
	if err != nil {
		pr.Close()
		t.Fatalf("Start(%q): %v", script, err)
	}
	return p, pr
}

// runner returns a runner for a spec with a protected .git/hooks (so that the helper has
// a mount namespace), the directory it may write, and one it may not.
func runner(t *testing.T) (r *sandbox.Runner, dir, outside string) {
	t.Helper()
	f := fence(t)
	dir, outside = t.TempDir(), t.TempDir()
	os.MkdirAll(dir+"/.git/hooks", 0o755)
	r, err := f.Runner(sandbox.Spec{Writable: []string{dir}, Protected: sandbox.GitProtected(dir)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir, outside
}

// gone reports whether process pid ended: it is not in /proc, or is a zombie.
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && strings.HasPrefix(string(b[i+1:]), " Z")
}

// waitGone waits up to 5 s for process pid to end, and reports whether it did.
func waitGone(t *testing.T, pid int) bool {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if gone(pid) {
			return true
		}
		// A real process ends in real time: no synctest bubble holds it.
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// pids returns the numbers of script's output, one a line.
func pids(t *testing.T, out string) []int {
	t.Helper()
	var ps []int
	for _, l := range strings.Fields(out) {
		n, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("not a pid: %q in %q", l, out)
		}
		ps = append(ps, n)
	}
	return ps
}

// TestRunnerStatus: the wait status tells an exit code and a death by a signal, as
// os.ProcessState would; and one helper runs both.
func TestRunnerStatus(t *testing.T) {
	r, dir, _ := runner(t)
	out, ws := runIn(t, r, dir, "echo $PPID; exit 3")
	if !ws.Exited() || ws.ExitStatus() != 3 {
		t.Errorf("exit 3: status %#x", ws)
	}
	first := pids(t, out)
	out, ws = runIn(t, r, dir, "echo $PPID; kill -TERM $$")
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("kill -TERM: status %#x", ws)
	}
	if second := pids(t, out); first[0] != second[0] {
		t.Errorf("two helpers for one spec: %d, then %d", first[0], second[0])
	}
	// Every thread of the helper was restricted, not only the one that started it.
	out, ws = runIn(t, r, dir, `n=0; for f in /proc/$PPID/task/*/status; do n=$((n+1)); grep -q 'NoNewPrivs:[[:space:]]*1' $f || exit 9; done; echo $n`)
	if ws.ExitStatus() != 0 || pids(t, out)[0] < 2 {
		t.Errorf("the helper's threads: %q, exit %d", out, ws.ExitStatus())
	}
}

// TestRunnerStartError: a command that cannot start is an error of Start, as with
// exec.Cmd.
func TestRunnerStartError(t *testing.T) {
	r, dir, _ := runner(t)
	_, err := r.Start(t.Context(), sandbox.Command{Path: "/bin/bash", Args: []string{"bash"}, Dir: filepath.Join(dir, "missing")})
	if err == nil || !strings.Contains(err.Error(), "fork/exec") {
		t.Errorf("Start in a missing directory: %v", err)
	}
	out, ws := runIn(t, r, dir, "echo still")
	if out != "still\n" || ws.ExitStatus() != 0 {
		t.Errorf("after a failed start: %q, %#x", out, ws)
	}
}

// TestRunnerInterleave: stdout and stderr on one pipe arrive in the order written.
func TestRunnerInterleave(t *testing.T) {
	r, dir, _ := runner(t)
	out, _ := runIn(t, r, dir, "for i in 1 2 3; do echo out$i; echo err$i >&2; done")
	if want := "out1\nerr1\nout2\nerr2\nout3\nerr3\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
}

// TestRunnerCancel: when the ctx ends, the command's whole process group is killed (a
// background sleep too), from outside the helper's namespaces, and Wait returns.
func TestRunnerCancel(t *testing.T) {
	r, dir, _ := runner(t)
	runIn(t, r, dir, "true") // the helper's start is not the command's time
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	p, pr := startIn(t, ctx, r, dir, "sleep 100 & echo $!; echo $$; wait")
	defer pr.Close()
	sc := bufio.NewScanner(pr)
	var ps []int
	for len(ps) < 2 && sc.Scan() {
		ps = append(ps, pids(t, sc.Text())...)
	}
	start := time.Now()
	ws, err := p.Wait()
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("status %#x, want killed", ws)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Wait took %v", d)
	}
	for _, pid := range ps {
		if !waitGone(t, pid) {
			t.Errorf("process %d outlived its group's kill", pid)
		}
	}
}

// TestRunnerWaitDelay: when the helper does not tell the exit after Cancel (here Cancel
// kills nothing and the command ignores nothing), Wait fails after WaitDelay.
func TestRunnerWaitDelay(t *testing.T) {
	r, dir, _ := runner(t)
	ctx, cancel := context.WithCancel(t.Context())
	p, err := r.Start(ctx, sandbox.Command{Path: "/bin/sleep", Args: []string{"sleep", "100"}, Dir: dir,
		Cancel: func() error { return nil }, WaitDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-p.Pid, syscall.SIGKILL)
	cancel()
	if _, err := p.Wait(); err == nil {
		t.Error("Wait returned a status for a process still running")
	}
}

// TestRunnerHelperKilled: a helper killed between commands is replaced: the next
// command runs, fenced; a command running when it died is told so.
func TestRunnerHelperKilled(t *testing.T) {
	r, dir, outside := runner(t)
	out, _ := runIn(t, r, dir, "echo $PPID")
	helper := pids(t, out)[0]
	running, pr := startIn(t, t.Context(), r, dir, "sleep 100")
	defer pr.Close()
	if err := syscall.Kill(helper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !waitGone(t, helper) {
		t.Fatal("the helper did not die")
	}
	if _, err := running.Wait(); !errors.Is(err, sandbox.ErrHelperGone) {
		t.Errorf("Wait of a command whose helper died: %v", err)
	}
	syscall.Kill(-running.Pid, syscall.SIGKILL)
	out, ws := runIn(t, r, dir, "echo $PPID; touch ok; touch "+outside+"/x; echo x > .git/hooks/pre-commit")
	if ws.ExitStatus() == 0 {
		t.Errorf("a write outside after the helper died: %q", out)
	}
	if ps := pids(t, strings.Fields(out)[0]); ps[0] == helper {
		t.Errorf("the same helper %d", helper)
	}
	for _, p := range []string{outside + "/x", dir + "/.git/hooks/pre-commit"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written: the command ran unfenced", p)
		}
	}
	if _, err := os.Stat(dir + "/ok"); err != nil {
		t.Errorf("the next command did not run: %v", err)
	}
}

// TestRunnerConcurrent: many commands at once on one helper each get their own output
// and status.
func TestRunnerConcurrent(t *testing.T) {
	r, dir, _ := runner(t)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			out, ws := runIn(t, r, dir, fmt.Sprintf("echo %d; exit %d", i, i%7))
			if out != fmt.Sprintf("%d\n", i) || ws.ExitStatus() != i%7 {
				t.Errorf("command %d: %q, status %d", i, out, ws.ExitStatus())
			}
		})
	}
	wg.Wait()
}

// TestRunnerClose: Close leaves no process: the helper and the commands still running
// end, and Wait says the helper ended; Start then fails.
func TestRunnerClose(t *testing.T) {
	r, dir, _ := runner(t)
	p, pr := startIn(t, t.Context(), r, dir, "sleep 100 & echo $PPID $! $$; wait")
	defer pr.Close()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	ps := pids(t, line)
	r.Close()
	if _, err := p.Wait(); !errors.Is(err, sandbox.ErrHelperGone) {
		t.Errorf("Wait after Close: %v", err)
	}
	for _, pid := range ps {
		if !waitGone(t, pid) {
			t.Errorf("process %d outlived Close", pid)
		}
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(ps[0])); err == nil {
		t.Errorf("the helper %d was not reaped", ps[0])
	}
	if _, err := r.Start(t.Context(), sandbox.Command{Path: "/bin/true", Args: []string{"true"}}); err == nil {
		t.Error("Start after Close started")
	}
}

// TestRunnerNewFiles: a .git/hooks made after the helper started is read-only for the
// next command, which gets a helper fenced in for it.
func TestRunnerNewFiles(t *testing.T) {
	f := fence(t)
	dir := t.TempDir()
	r, err := f.Runner(sandbox.Spec{Writable: []string{dir}, Protected: sandbox.GitProtected(dir)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if out, ws := runIn(t, r, dir, "mkdir -p .git/hooks"); ws.ExitStatus() != 0 {
		t.Fatalf("mkdir: %q", out)
	}
	if out, ws := runIn(t, r, dir, "echo x > .git/hooks/pre-commit"); ws.ExitStatus() == 0 {
		t.Errorf("a hook was written in a .git/hooks made by an earlier command: %q", out)
	}
}

// TestRunnerDevNull: nil descriptors are /dev/null, which the command may write to and
// read from, as with exec.Cmd.
func TestRunnerDevNull(t *testing.T) {
	r, dir, _ := runner(t)
	p, err := r.Start(t.Context(), sandbox.Command{Path: "/bin/bash", Args: []string{"bash", "-c", "echo out && echo err >&2 && cat"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if ws, err := p.Wait(); err != nil || ws.ExitStatus() != 0 {
		t.Errorf("Wait = %#x, %v", ws, err)
	}
}

// TestRunnerDistrustsHelper: a helper taken over, which names a process it did not
// start or answers without end, is killed; nothing of the caller's is: a pid it names
// outside its session has no group killed.
func TestRunnerDistrustsHelper(t *testing.T) {
	fence(t)
	victim := exec.Command("/bin/sleep", "100")
	victim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { victim.Process.Kill(); victim.Wait() }()
	for _, tc := range []struct{ name, answer string }{
		{"a foreign pid", fmt.Sprintf(`printf '{"id":1,"pid":%d}\n' >&3`, victim.Process.Pid)},
		{"an endless answer", `head -c 100000 /dev/zero | tr '\0' a >&3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exe := filepath.Join(t.TempDir(), "rogue")
			script := "#!/bin/sh\nprintf '{\"ready\":true}\\n' >&3\nsleep 0.2\n" + tc.answer + "\nsleep 5\n"
			if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			rogue, err := sandbox.New(sandbox.Options{Exe: exe})
			if err != nil {
				t.Fatal(err)
			}
			r, err := rogue.Runner(sandbox.Spec{Writable: []string{t.TempDir()}})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			start := time.Now()
			_, err = r.Start(t.Context(), sandbox.Command{Path: "/bin/true", Args: []string{"true"}})
			if !errors.Is(err, sandbox.ErrHelperGone) {
				t.Errorf("Start = %v, want the helper gone", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("Start took %v: the helper was not killed at once", d)
			}
			if err := victim.Process.Signal(syscall.Signal(0)); err != nil {
				t.Errorf("the process the helper named was killed: %v", err)
			}
		})
	}
}
