package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"myco.dev/hosts/sandbox"
	"myco.dev/internal/needs"
)

// fencedBash is a bash tool whose calls run in the sandbox through the runner: a
// session's directory in a git repository (so that the helper has a mount namespace),
// its temporary directory, a hidden home, and a directory outside all of them.
type fencedBash struct {
	b                     *Bash
	ctx                   context.Context
	dir, tmp, home, other string
}

func newFencedBash(t *testing.T, o BashOptions) *fencedBash {
	t.Helper()
	f, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := f.Support(); !s.Landlock || !s.Net || !s.UserNS {
		needs.Missing(t, "no sandbox with user namespaces: %s", s)
	}
	fb := &fencedBash{b: newTestBash(t, o), dir: t.TempDir(), tmp: t.TempDir(), home: t.TempDir(), other: t.TempDir()}
	os.MkdirAll(fb.dir+"/.git/hooks", 0o755)
	os.WriteFile(fb.home+"/secret", []byte("s3cret"), 0o600)
	spec := sandbox.Spec{Writable: []string{fb.dir, fb.tmp}, Protected: sandbox.GitProtected(fb.dir), Hidden: []string{fb.home}}
	fb.ctx = WithSandbox(WithWorkDir(t.Context(), fb.dir), Fenced{Fence: f, Spec: spec, TmpDir: fb.tmp, Mode: "workspace"})
	return fb
}

// call runs one bash action for owner in the sandbox.
func (fb *fencedBash) call(t *testing.T, owner string, in map[string]any) Result {
	t.Helper()
	raw, _ := json.Marshal(in)
	return fb.b.Call(fb.ctx, owner, raw)
}

// helperPid is the pid of the process that started owner's commands: the sandbox's
// helper.
func (fb *fencedBash) helperPid(t *testing.T, owner string) int {
	t.Helper()
	res := fb.call(t, owner, map[string]any{"command": "echo $PPID"})
	return pidIn(t, strings.TrimSuffix(res.Text, "[exit status 0]"))
}

// checkFenced fails unless a command of owner's runs, and runs fenced in.
func (fb *fencedBash) checkFenced(t *testing.T, owner string) {
	t.Helper()
	res := fb.call(t, owner, map[string]any{"command": "touch ok && echo $TMPDIR && touch $TMPDIR/t"})
	if res.IsError || !strings.Contains(res.Text, fb.tmp+"\n[exit status 0]") {
		t.Errorf("a write inside: %+v", res)
	}
	for _, script := range []string{"touch " + fb.other + "/x", "echo x > .git/hooks/pre-commit", "cat " + fb.home + "/secret"} {
		res := fb.call(t, owner, map[string]any{"command": script})
		if strings.Contains(res.Text, "exit status 0") || strings.Contains(res.Text, "s3cret") {
			t.Errorf("%s: %+v", script, res)
		}
	}
	for _, p := range []string{fb.other + "/x", fb.dir + "/.git/hooks/pre-commit"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// TestBashRunnerExec: fenced exec calls share one helper per owner and spec, which a
// session started alongside uses too, and tell exit statuses and signals as unfenced ones.
func TestBashRunnerExec(t *testing.T) {
	fb := newFencedBash(t, BashOptions{})
	fb.checkFenced(t, "o1")
	for _, tt := range []struct{ command, want string }{
		{"echo out; echo err >&2; echo out2", "out\nerr\nout2\n[exit status 0]"},
		{"exit 3", "[exit status 3]"},
		{"kill -TERM $$", "[killed by signal terminated]"},
		{"cat; echo done", "done\n[exit status 0]"},
	} {
		if res := fb.call(t, "o1", map[string]any{"command": tt.command}); res.IsError || !strings.HasSuffix(res.Text, tt.want) {
			t.Errorf("%s: %+v, want %q", tt.command, res, tt.want)
		}
	}
	helper := fb.helperPid(t, "o1")
	if helper == os.Getpid() {
		t.Fatal("the command was fenced by Wrap, not by a helper")
	}
	if again := fb.helperPid(t, "o1"); again != helper {
		t.Errorf("helpers %d, then %d, for one owner and spec", helper, again)
	}
	res := fb.call(t, "o1", map[string]any{"action": "start", "command": "echo $PPID; exec sleep 60"})
	if got := pidIn(t, strings.Split(res.Text, "\n")[1]); got != helper {
		t.Errorf("the session's parent is %d, not the helper %d", got, helper)
	}
	if other := fb.helperPid(t, "o2"); other == helper {
		t.Error("two owners share a helper")
	}
}

// TestBashRunnerTimeout: a fenced exec that times out has its whole process group
// killed, a background sleep with it, and so has one that leaves a process behind.
func TestBashRunnerTimeout(t *testing.T) {
	fb := newFencedBash(t, BashOptions{})
	fb.helperPid(t, "o1") // the helper's start is not the command's time
	start := time.Now()
	res := fb.call(t, "o1", map[string]any{"command": "echo before; sleep 30 & echo $! > pid; wait", "timeout_secs": 0.5})
	if !res.IsError || !strings.Contains(res.Text, "before\n[killed after timeout 0.5s]") {
		t.Fatalf("result = %+v, want a timeout error after the output", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("exec took %s after a 0.5 s timeout", d)
	}
	waitGone(t, pidIn(t, waitFile(t, fb.dir+"/pid")))
	res = fb.call(t, "o1", map[string]any{"command": "sleep 30 & echo $! > pid2; echo done"})
	if res.IsError || !strings.Contains(res.Text, "done\n[exit status 0]") {
		t.Fatalf("result = %+v", res)
	}
	waitGone(t, pidIn(t, waitFile(t, fb.dir+"/pid2")))
}

// TestBashRunnerCancelReleaseClose: a fenced exec is killed by a cancel, a Release and a
// Close; the last two also end the helper.
func TestBashRunnerCancelReleaseClose(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		stop       func(b *Bash, cancel func())
		helperEnds bool
	}{
		{"cancel", "[killed: the call was cancelled]", func(b *Bash, cancel func()) { cancel() }, false},
		{"release", "bash resources were released", func(b *Bash, cancel func()) { b.Release("o1") }, true},
		{"close", "the host is shutting down", func(b *Bash, cancel func()) { b.Close() }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fb := newFencedBash(t, BashOptions{})
			helper := fb.helperPid(t, "o1")
			ctx, cancel := context.WithCancel(fb.ctx)
			done := make(chan Result, 1)
			go func() {
				in, _ := json.Marshal(map[string]any{"command": "sleep 30 & echo $! > pid; wait"})
				done <- fb.b.Call(ctx, "o1", in)
			}()
			pid := pidIn(t, waitFile(t, fb.dir+"/pid"))
			tt.stop(fb.b, cancel)
			res := <-done
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Fatalf("result = %+v, want %q", res, tt.want)
			}
			waitGone(t, pid)
			if tt.helperEnds {
				if _, err := os.Stat("/proc/" + strconv.Itoa(helper)); err == nil {
					t.Errorf("the helper %d is left", helper)
				}
			} else if !alive(helper) {
				t.Errorf("a cancel ended the helper %d", helper)
			}
		})
	}
}

// TestBashRunnerRelease: Release ends the owner's helper and what it ran, sessions
// included, and leaves no process of theirs in /proc; the next call gets a new helper.
func TestBashRunnerRelease(t *testing.T) {
	fb := newFencedBash(t, BashOptions{})
	res := fb.call(t, "o1", map[string]any{"action": "start", "command": "sleep 60 & echo $PPID $$ $!; wait"})
	ps := strings.Fields(strings.Split(res.Text, "\n")[1])
	if len(ps) != 3 {
		t.Fatalf("start = %+v", res)
	}
	fb.b.Release("o1")
	for _, p := range ps {
		// Not even a zombie left to init: the helper reaps its own.
		if _, err := os.Stat("/proc/" + p); err == nil {
			t.Errorf("process %s is left in /proc", p)
		}
	}
	if helper := fb.helperPid(t, "o1"); strconv.Itoa(helper) == ps[0] {
		t.Errorf("the released helper %d serves again", helper)
	}
	fb.checkFenced(t, "o1")
}

// TestBashRunnerHelperKilled: a helper killed between calls is replaced: the next call
// runs, fenced in; a session it ran is told it ended.
func TestBashRunnerHelperKilled(t *testing.T) {
	fb := newFencedBash(t, BashOptions{})
	res := fb.call(t, "o1", map[string]any{"action": "start", "command": "echo $$; exec sleep 60"})
	session := pidIn(t, strings.Split(res.Text, "\n")[1])
	helper := fb.helperPid(t, "o1")
	if err := syscall.Kill(helper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, helper)
	waitGone(t, session) // its wait failed, so its group was killed
	if s := fb.b.Sessions("o1"); len(s) != 1 || s[0].State != "exited" || !strings.Contains(s[0].Status, "helper") {
		t.Errorf("the session after its helper died: %+v", s)
	}
	if again := fb.helperPid(t, "o1"); again == helper {
		t.Errorf("the dead helper %d answered", helper)
	}
	fb.checkFenced(t, "o1")
}

// TestBashRunnerConcurrent: many fenced calls at once on one owner's helper.
func TestBashRunnerConcurrent(t *testing.T) {
	fb := newFencedBash(t, BashOptions{})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			res := fb.call(t, "o1", map[string]any{"command": fmt.Sprintf("echo %d > f%d; cat f%d; exit %d", i, i, i, i%3)})
			if want := fmt.Sprintf("%d\n[exit status %d]", i, i%3); res.Text != want {
				t.Errorf("call %d = %q, want %q", i, res.Text, want)
			}
		})
	}
	wg.Wait()
}

// TestBashRunnerTellsReaper: a group the helper starts is told to the reaper as one the
// tool starts itself.
func TestBashRunnerTellsReaper(t *testing.T) {
	r := &fakeReaper{}
	fb := newFencedBash(t, BashOptions{Reaper: r})
	res := fb.call(t, "o1", map[string]any{"command": "echo $$"})
	pid := pidIn(t, strings.TrimSuffix(res.Text, "[exit status 0]"))
	if got, want := r.took(), []string{"prepare", fmt.Sprint("+", pid), fmt.Sprint("-", pid)}; !slices.Equal(got, want) {
		t.Fatalf("reaper events = %v, want %v", got, want)
	}
}

// TestBashRunnerFallback: where the fence executable has no helper mode, commands are
// fenced one by one, never run unfenced.
func TestBashRunnerFallback(t *testing.T) {
	fb := newFencedBash(t, BashOptions{})
	old := filepath.Join(t.TempDir(), "old-fence")
	// An executable that fences as Wrap asks but serves no runner: exit 126 for "serve".
	script := "#!/bin/sh\nif [ \"$2\" = serve ]; then echo 'myco sandbox: decode the spec' >&2; exit 126; fi\nexec " + os.Args[0] + " \"$@\"\n"
	if err := os.WriteFile(old, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := sandbox.New(sandbox.Options{Exe: old})
	if err != nil {
		t.Fatal(err)
	}
	fenced, _ := SandboxFrom(fb.ctx)
	fenced.Fence = f
	fb.ctx = WithSandbox(fb.ctx, fenced)
	fb.checkFenced(t, "o1")
	if parent := fb.helperPid(t, "o1"); parent != os.Getpid() {
		t.Errorf("the command's parent is %d, not this process: not fenced by Wrap", parent)
	}
}
