package snapshot

import (
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
)

// The benchmarks run on one tree of 10,000 files of 10 KB (about 100 MB of text, 100
// directories), made once per run and committed to a git repository so that git status
// --porcelain, timed in the same run, has its index. Each reports medians in ms and the
// ratio to git status. Run them with
//
//	go test -run XXX -bench . -benchtime 20x ./hosts/snapshot
//
// The machine's load moves the times (git status's too); the CPU times, reported beside
// them, move less.

const (
	benchFiles = 10_000
	benchSize  = 10 << 10
)

var bench struct {
	once  sync.Once
	dir   string
	files []string // relative paths
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bench.dir != "" {
		os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

// benchContent is text that compresses like source code does (about 3:1), unlike random
// bytes.
func benchContent(r *rand.Rand, size int) []byte {
	words := []string{"func", "return", "if", "err", "nil", "string", "for", "range", "x", "y", "value", "ctx", "the", "package", "import", "{", "}", "(", ")", ":=", "=", "0", "1", "len"}
	var sb strings.Builder
	for sb.Len() < size {
		for range 1 + r.IntN(10) {
			sb.WriteString(words[r.IntN(len(words))])
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%d\n", r.IntN(100000))
	}
	return []byte(sb.String()[:size])
}

func benchTree(b *testing.B) string {
	b.Helper()
	bench.once.Do(func() {
		bench.dir, bench.err = os.MkdirTemp("", "snapshot-bench-")
		if bench.err != nil {
			return
		}
		r := rand.New(rand.NewPCG(30, 30))
		for i := range benchFiles {
			rel := fmt.Sprintf("pkg%02d/sub%d/file%04d.go", i%10, (i/10)%10, i)
			full := filepath.Join(bench.dir, rel)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				bench.err = err
				return
			}
			if err := os.WriteFile(full, benchContent(r, benchSize), 0o644); err != nil {
				bench.err = err
				return
			}
			bench.files = append(bench.files, rel)
		}
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "tree"}} {
			if bench.err = gitBench(bench.dir, args...); bench.err != nil {
				return
			}
		}
		// past both racy windows (git's index, the stat cache), then a settled index
		time.Sleep(racyWindow + 100*time.Millisecond)
		bench.err = gitBench(bench.dir, "update-index", "-q", "--refresh")
	})
	if bench.err != nil {
		b.Fatalf("make the benchmark tree: %v", bench.err)
	}
	return bench.dir
}

func gitBench(dir string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %v: %w: %s", args, err, out)
	}
	return nil
}

// resetTree puts the benchmark tree back as committed.
func resetTree(b *testing.B, dir string) {
	b.Helper()
	if err := gitBench(dir, "reset", "-q", "--hard"); err != nil {
		b.Fatal(err)
	}
	gitBench(dir, "update-index", "-q", "--refresh")
}

// gitStatus runs git status --porcelain in dir and returns its wall and CPU (user and
// system) times.
func gitStatus(b *testing.B, dir string) (wall, cpu time.Duration) {
	b.Helper()
	cmd := exec.Command("git", "status", "--porcelain")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git status: %v: %s", err, out)
	}
	return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// cpuTime returns the CPU time (user and system) this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// versus collects the times of an operation and of git status, taken in turns so that
// both see the same load.
type versus struct {
	ours, git       []time.Duration
	oursCPU, gitCPU time.Duration
}

// run times op, then git status in dir (outside the benchmark's timer).
func (v *versus) run(b *testing.B, dir string, op func()) {
	cpu0 := cpuTime()
	start := time.Now()
	op()
	v.ours = append(v.ours, time.Since(start))
	v.oursCPU += cpuTime() - cpu0
	b.StopTimer()
	wall, cpu := gitStatus(b, dir)
	v.git = append(v.git, wall)
	v.gitCPU += cpu
	b.StartTimer()
}

// report reports the medians, the mean CPU times (the machine's load aside) and their
// ratios.
func (v *versus) report(b *testing.B) {
	n := time.Duration(len(v.ours))
	ours, git := median(v.ours), median(v.git)
	b.ReportMetric(ms(ours), "ms-median")
	b.ReportMetric(ms(git), "ms-git-status")
	b.ReportMetric(float64(ours)/float64(git), "x-git-status")
	b.ReportMetric(ms(v.oursCPU/n), "ms-cpu")
	b.ReportMetric(ms(v.gitCPU/n), "ms-cpu-git-status")
	b.ReportMetric(float64(v.oursCPU)/float64(v.gitCPU), "x-cpu-git-status")
}

func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func benchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkCaptureUnchanged is the capture after a tool batch that changed nothing: it
// trusts the watch, so no directory is listed.
func BenchmarkCaptureUnchanged(b *testing.B) { benchUnchanged(b, true) }

// BenchmarkCaptureUnchangedWalk is the turn's first capture of an unchanged tree, which
// lists every directory and stats every file.
func BenchmarkCaptureUnchangedWalk(b *testing.B) { benchUnchanged(b, false) }

func benchUnchanged(b *testing.B, watch bool) {
	dir := benchTree(b)
	resetTree(b, dir)
	s := benchStore(b)
	if _, err := s.Capture(b.Context(), CaptureRequest{Owner: "b", Dir: dir}); err != nil {
		b.Fatal(err)
	}
	var v versus
	for b.Loop() {
		v.run(b, dir, func() {
			snap, err := s.Capture(b.Context(), CaptureRequest{Owner: "b", Dir: dir, Watch: watch})
			if err != nil || snap.Read > 0 || (watch && snap.Listed > 0) {
				b.Fatalf("Capture = %+v, %v; want nothing read (nor listed, with the watch)", snap, err)
			}
		})
	}
	v.report(b)
}

func BenchmarkCaptureTenChanged(b *testing.B) {
	dir := benchTree(b)
	resetTree(b, dir)
	s := benchStore(b)
	if _, err := s.Capture(b.Context(), CaptureRequest{Owner: "b", Dir: dir}); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	var v versus
	round := 0
	for b.Loop() {
		b.StopTimer()
		var changed []string
		for i := range 10 {
			rel := bench.files[(round*10+i)*7919%len(bench.files)]
			if err := os.WriteFile(filepath.Join(dir, rel), benchContent(r, benchSize), 0o644); err != nil {
				b.Fatal(err)
			}
			changed = append(changed, rel)
		}
		round++
		b.StartTimer()
		// git status sees the 10 files changed, as the capture does
		v.run(b, dir, func() {
			snap, err := s.Capture(b.Context(), CaptureRequest{Owner: "b", Dir: dir, Watch: true})
			if err != nil || snap.Added == 0 {
				b.Fatalf("Capture = %+v, %v; want the changes stored", snap, err)
			}
		})
		b.StopTimer()
		if err := gitBench(dir, append([]string{"add", "--"}, changed...)...); err != nil {
			b.Fatal(err) // the next round's git status sees only its own 10
		}
		b.StartTimer()
	}
	v.report(b)
	resetTree(b, dir)
}

func BenchmarkUndo100(b *testing.B) {
	dir := benchTree(b)
	resetTree(b, dir)
	s := benchStore(b)
	before, err := s.Capture(b.Context(), CaptureRequest{Owner: "b", Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2, 2))
	for i := range 100 {
		rel := bench.files[i*97%len(bench.files)]
		if err := os.WriteFile(filepath.Join(dir, rel), benchContent(r, benchSize), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	after, err := s.Capture(b.Context(), CaptureRequest{Owner: "b", Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	var ds []time.Duration
	var cpu time.Duration
	for b.Loop() {
		cpu0 := cpuTime()
		start := time.Now()
		res, err := s.Restore(b.Context(), RestoreRequest{From: after.ID, To: before.ID})
		ds = append(ds, time.Since(start))
		cpu += cpuTime() - cpu0
		if err != nil || len(res.Restored) != 100 || len(res.Conflicts) > 0 {
			b.Fatalf("undo: %d restored, %+v, %v", len(res.Restored), res.Conflicts, err)
		}
		b.StopTimer()
		if res, err := s.Restore(b.Context(), RestoreRequest{From: before.ID, To: after.ID}); err != nil || len(res.Conflicts) > 0 {
			b.Fatalf("redo: %+v, %v", res, err)
		}
		b.StartTimer()
	}
	resetTree(b, dir)
	b.ReportMetric(ms(median(ds)), "ms-median")
	b.ReportMetric(ms(cpu/time.Duration(len(ds))), "ms-cpu")
}

// BenchmarkStorage: what 100 turns that each change one 10 KB file add to the store, above
// the first capture of the tree. The turns run once, whatever -benchtime says; the loop
// measures a capture.
func BenchmarkStorage(b *testing.B) {
	dir := benchTree(b)
	resetTree(b, dir)
	s := benchStore(b)
	if _, err := s.Capture(b.Context(), CaptureRequest{Owner: "b", Dir: dir}); err != nil {
		b.Fatal(err)
	}
	base, _ := s.Size()
	r := rand.New(rand.NewPCG(3, 3))
	for turn := range 100 {
		if _, err := s.Capture(b.Context(), CaptureRequest{Owner: "b", Dir: dir}); err != nil {
			b.Fatal(err)
		}
		rel := bench.files[turn*131%len(bench.files)]
		if err := os.WriteFile(filepath.Join(dir, rel), benchContent(r, benchSize), 0o644); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Capture(b.Context(), CaptureRequest{Owner: "b", Dir: dir}); err != nil {
			b.Fatal(err)
		}
	}
	end, _ := s.Size()
	for b.Loop() {
		if _, err := s.Capture(b.Context(), CaptureRequest{Owner: "b", Dir: dir}); err != nil {
			b.Fatal(err)
		}
	}
	resetTree(b, dir)
	b.ReportMetric(float64(base)/(1<<20), "MB-first-capture")
	b.ReportMetric(float64(end-base)/(1<<20), "MB-per-100-turns")
}

// BenchmarkWalkFloor is the floor under a capture of the unchanged tree: a bare walk that
// lists every directory and lstats every entry (os.File.Readdir), and nothing else.
func BenchmarkWalkFloor(b *testing.B) {
	dir := benchTree(b)
	var walk func(p string) int
	walk = func(p string) int {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		infos, err := f.Readdir(-1)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, fi := range infos {
			if fi.IsDir() && fi.Name() != ".git" {
				n += walk(filepath.Join(p, fi.Name()))
			}
			n++
		}
		return n
	}
	var ds []time.Duration
	cpu0 := cpuTime()
	for b.Loop() {
		start := time.Now()
		walk(dir)
		ds = append(ds, time.Since(start))
	}
	b.ReportMetric(ms(median(ds)), "ms-median")
	b.ReportMetric(ms((cpuTime()-cpu0)/time.Duration(len(ds))), "ms-cpu")
}
