package profiles

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shellPool returns a pool whose workers run the shell script script.
func shellPool(t *testing.T, stop time.Duration, script string) *Pool {
	t.Helper()
	p, err := New(Options{StopTimeout: stop,
		Command: func(string) ([]string, []string) { return []string{"sh", "-c", script, "worker"}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCloseKillsEveryHungWorker: workers that do not stop when their stdin closes are all
// killed once StopTimeout has passed; Close once waited without end for the second.
func TestCloseKillsEveryHungWorker(t *testing.T) {
	p := shellPool(t, 200*time.Millisecond, `echo ready; exec sleep 30 <&-`)
	for _, name := range []string{"a", "b", "c"} {
		if err := p.Start(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waits, 10 s after a StopTimeout of 200ms, for workers that ignore their stdin")
	}
	for _, st := range p.States() {
		if st.Running {
			t.Errorf("%s still runs after Close", st.Profile)
		}
	}
}

// TestReadyTwice: a worker that says "ready" twice does not bring the supervisor down.
// After the second "ready" it writes more than a pipe holds and then opens a FIFO: the
// open returns once the pool has read past the second line (a panic there ends the test
// binary).
func TestReadyTwice(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "past")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p := shellPool(t, time.Second, `echo ready; echo ready; yes line | head -n 100000; echo >'`+fifo+`'; exec cat >/dev/null`)
	t.Cleanup(p.Close)
	if err := p.Start(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() { _, err := os.ReadFile(fifo); read <- err }()
	select {
	case err := <-read:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pool did not read past the second ready in 10 s")
	}
}

// waitExited waits until the pool has seen profile name's worker exit.
func waitExited(t *testing.T, p *Pool, name string) {
	t.Helper()
	p.mu.Lock()
	done := p.workers[name].done
	p.mu.Unlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the killed worker still shows as running")
	}
}

// TestGenerationAfterACrash: a worker started again after a crash has a new generation and
// a new channel, so that the supervisor drops the connections it kept to the old process.
// Running reaches a running worker and starts none; the crash is counted for good.
func TestGenerationAfterACrash(t *testing.T) {
	p := shellPool(t, time.Second, `echo ready; exec cat >/dev/null`)
	t.Cleanup(p.Close)
	if _, _, ok := p.Running("a"); ok {
		t.Error("Running(a) before any start = ok")
	}
	snd1, gen1, err := p.Worker(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, gen, _ := p.Worker(t.Context(), "a"); gen != gen1 {
		t.Errorf("the same process: generation %d, then %d", gen1, gen)
	}
	if snd, gen, ok := p.Running("a"); !ok || snd != snd1 || gen != gen1 {
		t.Errorf("Running(a) = %v, %d, %v; want the running worker's sender and generation %d", snd, gen, ok, gen1)
	}
	pid := p.States()[0].PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExited(t, p, "a")
	if p.States()[0].Running {
		t.Fatal("the killed worker still shows as running")
	}
	if _, _, ok := p.Running("a"); ok || p.States()[0].Running {
		t.Error("Running(a) after the crash = ok, or it started the worker again")
	}
	if st := p.States()[0]; st.TotalCrashes != 1 {
		t.Errorf("TotalCrashes = %d, want 1", st.TotalCrashes)
	}
	snd2, gen2, err := p.Worker(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if snd2 == snd1 || gen2 == gen1 {
		t.Errorf("after a crash: generation %d, before %d (same sender: %v); want a new generation and channel", gen2, gen1, snd2 == snd1)
	}
}

// TestCrashLeavesOneLogLine: a worker that crashes leaves exactly one line in the
// server's log, naming its profile; a pool without a logger writes it to slog.Default(),
// never nowhere.
func TestCrashLeavesOneLogLine(t *testing.T) {
	for _, name := range []string{"given logger", "nil logger"} {
		t.Run(name, func(t *testing.T) {
			var logs syncBuffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			o := Options{StopTimeout: time.Second,
				Command: func(string) ([]string, []string) { return []string{"sh", "-c", `echo ready; exec cat >/dev/null`}, nil }}
			if name == "nil logger" {
				old := slog.Default()
				slog.SetDefault(log)
				t.Cleanup(func() { slog.SetDefault(old) })
			} else {
				o.Log = log
			}
			p, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			if err := p.Start(t.Context(), "work"); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(p.States()[0].PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitExited(t, p, "work")
			var crashes []string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "crashed") {
					crashes = append(crashes, l)
				}
			}
			if len(crashes) != 1 || !strings.Contains(crashes[0], "profile=work") || !strings.Contains(crashes[0], "killed") {
				t.Errorf("log lines about the crash: %q, want one naming profile work and the signal", crashes)
			}
		})
	}
}

// TestTailPass: what a worker writes to stderr reaches the server's log one line each:
// its logger's lines as they are, anything else (a panic) in the log's format, naming the
// profile, so that a JSON log stays one object a line.
func TestTailPass(t *testing.T) {
	for _, tt := range []struct {
		json bool
		in   string
		want []string
	}{
		{false, "time=x level=INFO msg=hi profile=p\npanic: boom\n", []string{"time=x level=INFO msg=hi profile=p", "profile p: panic: boom"}},
		{true, `{"msg":"hi","profile":"p"}` + "\npanic: boom\n{not json\n", []string{`{"msg":"hi","profile":"p"}`, `"msg":"panic: boom","profile":"p","stream":"stderr"`, `"msg":"{not json","profile":"p"`}},
	} {
		var out strings.Builder
		tl := &tail{max: 1 << 10, profile: "p", json: tt.json, out: &out}
		tl.Write([]byte(tt.in[:5])) // in two writes: lines are joined across them
		tl.Write([]byte(tt.in[5:]))
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != len(tt.want) {
			t.Fatalf("json %v: %d lines, want %d:\n%s", tt.json, len(lines), len(tt.want), out.String())
		}
		for i, l := range lines {
			if !strings.Contains(l, tt.want[i]) || tt.json && !json.Valid([]byte(l)) {
				t.Errorf("json %v: line %d = %q, want %q (and JSON)", tt.json, i, l, tt.want[i])
			}
		}
	}
}

// TestWorkerOfAnotherBuild: a worker that says another build than the pool's with
// "ready" (its binary was replaced under the server) is stopped and its start refused,
// saying why and what to do; one of the pool's build serves.
func TestWorkerOfAnotherBuild(t *testing.T) {
	p, err := New(Options{StopTimeout: time.Second, Build: "aaaaaaaaaaaa",
		Command: func(name string) ([]string, []string) {
			build := map[string]string{"old": "aaaaaaaaaaaa", "new": "bbbbbbbbbbbb"}[name]
			return []string{"sh", "-c", "echo ready " + build + "; exec cat >/dev/null", "worker"}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if err := p.Start(t.Context(), "old"); err != nil {
		t.Errorf("a worker of the pool's build: %v", err)
	}
	err = p.Start(t.Context(), "new")
	if err == nil || !strings.Contains(err.Error(), `runs build "bbbbbbbbbbbb", the server build "aaaaaaaaaaaa"`) || !strings.Contains(err.Error(), "restart the server") {
		t.Errorf("a worker of another build: %v, want it refused, saying to restart", err)
	}
	for _, st := range p.States() {
		if st.Profile == "new" && st.Running {
			t.Error("the worker of another build still runs")
		}
	}
}
