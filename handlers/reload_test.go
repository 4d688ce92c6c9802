package handlers

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeEngine stands for a profile's engine under a Reloader: it counts what is done to
// it, and says what it holds and what a change leaves pending.
type fakeEngine struct {
	mu                            sync.Mutex // guards the fields below
	loads, applies, stops, closes int
	jobs                          bool
	holders, pending              []string
	configErr                     error
}

func (f *fakeEngine) built() Built {
	return Built{
		Deps: Deps{Profile: "default"},
		Holding: func() (bool, []string) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.jobs, f.holders
		},
		Apply: func() (Deps, []string, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.applies++
			return Deps{Profile: "default"}, f.pending, f.configErr
		},
		Stop:  func() { f.mu.Lock(); f.stops++; f.mu.Unlock() },
		Close: func() { f.mu.Lock(); f.closes++; f.mu.Unlock() },
	}
}

func (f *fakeEngine) counts() (loads, applies, stops, closes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loads, f.applies, f.stops, f.closes
}

func (f *fakeEngine) set(change func(*fakeEngine)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

// TestReloaderContent (issue 28): the config is applied again when its bytes change, not
// its time or size alone; a change is applied in place, ending nothing; a change that
// needs a new server waits while a job runs or a session keeps a process running, saying
// so on the pages, and is then loaded, the old server stopped and closed; a config that
// does not load leaves the last good one serving; a FIFO put there is a change whose load
// says what is wrong, and never blocks.
func TestReloaderContent(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.toml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("model = \"m\"\n")
	f := &fakeEngine{}
	r, err := NewReloader(ReloaderOptions{ConfigFile: cfg, Log: slog.New(slog.NewTextHandler(t.Output(), nil)),
		Load: func() (Built, error, error) { f.set(func(f *fakeEngine) { f.loads++ }); return f.built(), nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string, loads, applies, stops int, warning string) {
		t.Helper()
		r.look()
		l, a, s, c := f.counts()
		r.mu.Lock()
		w := r.warning
		r.mu.Unlock()
		if l != loads || a != applies || s != stops || c != stops || !strings.Contains(w, warning) || warning == "" && w != "" {
			t.Errorf("%s: %d loads, %d applies, %d stops, %d closes, warning %q; want %d, %d, %d, %d, %q", step, l, a, s, c, w, loads, applies, stops, stops, warning)
		}
	}
	check("unchanged", 1, 0, 0, "")
	later := time.Now().Add(time.Hour)
	os.Chtimes(cfg, later, later)
	check("touched", 1, 0, 0, "")
	write("model = \"m\"\n")
	check("written again as it was", 1, 0, 0, "")
	write("# a comment\nmodel = \"m\"\n")
	check("a comment", 1, 1, 0, "")

	f.set(func(f *fakeEngine) { f.pending, f.holders, f.jobs = []string{"mcp_servers"}, []string{"s1"}, true })
	write("[mcp_servers.x]\ncommand = \"x\"\n")
	check("a change that needs a new server", 1, 2, 0, "its change to mcp_servers needs the tools started again, which waits while a turn runs and session s1 keeps a process running")
	f.set(func(f *fakeEngine) { f.jobs = false })
	check("still held", 1, 2, 0, "which waits while session s1 keeps a process running")
	f.set(func(f *fakeEngine) { f.holders, f.pending = nil, nil })
	check("nothing held", 2, 2, 1, "")

	f.set(func(f *fakeEngine) { f.configErr = errors.New("config.toml:1: broken") })
	write("broken")
	check("a broken config", 2, 3, 1, "the last good config keeps serving: config.toml:1: broken")

	os.Remove(cfg)
	check("removed", 2, 3, 1, "the last good config keeps serving")
	if err := syscall.Mkfifo(cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { check("a FIFO", 2, 4, 1, "config.toml:1: broken"); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("looking at a FIFO config blocked")
	}
}
