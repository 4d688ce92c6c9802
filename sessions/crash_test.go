package sessions

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/needs"
)

// crashDriver is the built sessions/internal/crashdriver, or "" when the build failed.
var crashDriver string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "crashdriver-")
	if err == nil {
		bin := filepath.Join(dir, "crashdriver")
		if out, berr := exec.Command("go", "build", "-o", bin, "./internal/crashdriver").CombinedOutput(); berr == nil {
			crashDriver = bin
		} else {
			fmt.Fprintf(os.Stderr, "build crashdriver: %v\n%s", berr, out)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestCrashRecovery kills a process running 200 scripted turns with tool batches at random
// points. After every kill the session loads, every checkpoint the process reported is
// there, every completed turn's input is there, and calls left unresolved have explicit
// unknown outcomes; the next process carries on from there. The second case does the same
// while turns auto-compact between tool rounds.
func TestCrashRecovery(t *testing.T) {
	needs.Long(t, "the crash test (it runs the driver for several seconds)")
	if crashDriver == "" {
		t.Fatal("the crash driver did not build")
	}
	for _, tt := range []struct {
		name         string
		turns, kills int
		flags        []string
	}{
		{"tool batches", 200, 30, nil},
		{"auto-compaction between tool rounds", 30, 8, []string{"-compact"}},
	} {
		t.Run(tt.name, func(t *testing.T) { crashRecovery(t, tt.turns, tt.kills, tt.flags...) })
	}
}

func crashRecovery(t *testing.T, turns, kills int, flags ...string) {
	dir := t.TempDir()
	st := NewStore(dir)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var ckpts = map[string]int{} // thread -> messages reported durable
	done := 0
	unknowns, recovered := 0, 0
	deadline := time.Now().Add(60 * time.Second)
	for k := 0; ; k++ {
		if time.Now().After(deadline) {
			t.Fatal("the crash test did not finish in time")
		}
		cmd := exec.Command(crashDriver, append([]string{"-dir", dir, "-session", "crash-1", "-turns", fmt.Sprint(turns)}, flags...)...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		wg.Go(func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				var th string
				var n int
				mu.Lock()
				if _, err := fmt.Sscanf(sc.Text(), "ckpt %s %d", &th, &n); err == nil {
					ckpts[th] = max(ckpts[th], n)
				} else if _, err := fmt.Sscanf(sc.Text(), "done %d", &n); err == nil {
					done = max(done, n)
				}
				mu.Unlock()
			}
		})
		killed := false
		if k < kills {
			timer := time.AfterFunc(time.Duration(30+rng.IntN(300))*time.Millisecond, func() { cmd.Process.Signal(syscall.SIGKILL) })
			wg.Wait()
			err = cmd.Wait()
			killed = !timer.Stop()
		} else {
			wg.Wait()
			err = cmd.Wait()
		}
		if err != nil && !killed {
			t.Fatalf("run %d: driver failed: %v\n%s", k, err, stderr.String())
		}

		s, lerr := st.Load(t.Context(), "crash-1")
		mu.Lock()
		nothingYet := len(ckpts) == 0 && done == 0
		mu.Unlock()
		if killed && nothingYet && errors.Is(lerr, ErrNotFound) {
			continue // killed before it created the session (a loaded machine is slow to start it)
		}
		if lerr != nil {
			t.Fatalf("after kill %d: Load: %v", k, lerr)
		}
		mu.Lock()
		for th, n := range ckpts {
			if got := s.Thread(th); got == nil || got.saved < n {
				t.Fatalf("after kill %d: thread %s lost checkpointed messages (reported %d durable)", k, th, n)
			}
		}
		inputs := map[string]bool{}
		for _, th := range s.Threads {
			for _, e := range th.Entries {
				if e.AcceptedAt != nil {
					inputs[e.Message.Text()] = true
				}
			}
		}
		for i := 1; i <= done; i++ {
			if !inputs[fmt.Sprintf("turn %d", i)] {
				t.Fatalf("after kill %d: the input of completed turn %d is lost", k, i)
			}
		}
		mu.Unlock()
		th := s.Latest()
		if err := th.Executable(); err != nil {
			t.Fatalf("after kill %d: %v", k, err)
		}
		if n := len(th.Entries); n > 0 && th.Entries[n-1].Recovered {
			recovered++
			for _, p := range th.Entries[n-1].Message.Parts {
				if r := p.ToolResult; r != nil && r.Unknown {
					unknowns++
					if !strings.Contains(r.Text, "outcome unknown") || !strings.Contains(r.Text, "host local") {
						t.Errorf("after kill %d: unknown outcome %q lacks the host", k, r.Text)
					}
				}
			}
			if unknownIn(th.Entries[n-1].Message) && !hasRuntimeNotice(th.Entries[n-1].Message) {
				t.Errorf("after kill %d: unknown outcomes without a runtime notice", k)
			}
		}
		if !killed {
			break
		}
	}
	if done != turns {
		t.Fatalf("completed %d turns, want %d", done, turns)
	}
	s, err := st.Load(t.Context(), "crash-1")
	if err != nil {
		t.Fatal(err)
	}
	compactions := 0
	for _, th := range s.Threads {
		if th.Reason == "compaction" {
			compactions++
		}
	}
	if slices.Contains(flags, "-compact") && compactions < turns/4 {
		t.Errorf("%d compactions in %d turns; the driver must compact in most turns", compactions, turns)
	}
	t.Logf("%d kills; %d recovered tool batches with %d unknown outcomes; %d threads", kills, recovered, unknowns, len(s.Threads))
}

func unknownIn(m model.Message) bool {
	for _, p := range m.Parts {
		if p.ToolResult != nil && p.ToolResult.Unknown {
			return true
		}
	}
	return false
}

func hasRuntimeNotice(m model.Message) bool {
	for _, p := range m.Parts {
		if p.Kind == model.KindSystem && p.System == "runtime" {
			return true
		}
	}
	return false
}

// TestCrashShowsLastOutput kills a process while its tool calls run real bash commands that
// have printed a line: the next load shows that output in the calls' unknown outcomes. (The
// commands' own process groups outlive the kill by their 2 s sleep.)
func TestCrashShowsLastOutput(t *testing.T) {
	if crashDriver == "" {
		t.Fatal("the crash driver did not build")
	}
	dir := t.TempDir()
	cmd := exec.Command(crashDriver, "-dir", dir, "-session", "crash-2", "-turns", "1", "-bash")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	seen := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "progress ") {
			seen = true
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !seen {
		t.Fatal("the driver saved no progress before it ended")
	}
	s, err := NewStore(dir).Load(t.Context(), "crash-2")
	if err != nil {
		t.Fatal(err)
	}
	th := s.Latest()
	last := th.Entries[len(th.Entries)-1]
	withOutput := 0
	for _, p := range last.Message.Parts {
		if r := p.ToolResult; r != nil && r.Unknown && strings.Contains(r.Text, "last output seen") && strings.Contains(r.Text, "output of "+r.CallID) {
			withOutput++
		}
	}
	if !last.Recovered || withOutput == 0 {
		t.Errorf("recovered message %+v: want unknown outcomes with the last output seen", last.Message.Parts)
	}
}
