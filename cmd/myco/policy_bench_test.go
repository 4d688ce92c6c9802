package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
)

// BenchmarkSandboxedBash (issue 31) runs a 20-step myco -p (20 bash calls, each writing a
// file in the session's directory, then an answer) in workspace mode, every command in the
// sandbox, and in full mode, unsandboxed, in turns so that both see the same load, with
// myco-fence beside myco as make build puts it. It reports each median and their ratio
// (goal: at most 1.15). BenchmarkSandboxedBash/myco-as-fence is the same without
// myco-fence, where myco fences with itself.
func BenchmarkSandboxedBash(b *testing.B) {
	f := newBenchBins(b)
	for _, withFence := range []bool{true, false} {
		name := "myco-fence"
		if !withFence {
			name = "myco-as-fence"
		}
		b.Run(name, func(b *testing.B) {
			bin := f.myco
			if !withFence {
				bin = f.bare
			}
			const steps, rounds = 20, 7
			var turns []fakemodel.Turn
			for range 2 * rounds * max(b.N, 1) {
				for i := range steps {
					turns = append(turns, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: fmt.Sprintf("c%d", i), Name: "bash",
						Args: fmt.Sprintf(`{"command":"echo step %d > step%d.txt && cat step%d.txt"}`, i, i, i)}}})
				}
				turns = append(turns, fakemodel.Turn{Text: "Done."})
			}
			fake := fakemodel.New(b, turns...)
			home := profileHome(b, "anthropic-messages", fake.URL, "")
			run := func(mode string) time.Duration {
				dir := b.TempDir()
				start := time.Now()
				cmd := exec.Command(bin, "-p", "twenty steps", "--mode", mode)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("myco -p --mode %s: %v\n%s", mode, err, out)
				}
				d := time.Since(start)
				if got, _ := os.ReadFile(filepath.Join(dir, "step19.txt")); string(got) != "step 19\n" {
					b.Fatalf("--mode %s: the last step's file is %q", mode, got)
				}
				return d
			}
			var sandboxed, full []time.Duration
			b.ResetTimer()
			for range b.N {
				for range rounds {
					sandboxed = append(sandboxed, run("workspace"))
					full = append(full, run("full"))
				}
			}
			ms, mf := median(sandboxed), median(full)
			b.ReportMetric(float64(ms.Milliseconds()), "ms-workspace")
			b.ReportMetric(float64(mf.Milliseconds()), "ms-full")
			b.ReportMetric(float64(ms)/float64(mf), "ratio")
			b.Logf("%s: a 20-step -p run takes %v in workspace mode and %v in full mode (median of %d each): ratio %.3f", name, ms, mf, len(full), float64(ms)/float64(mf))
		})
	}
}

// benchBins are myco with myco-fence beside it, as make build makes them, and myco alone.
type benchBins struct{ myco, bare string }

func newBenchBins(b *testing.B) benchBins {
	b.Helper()
	dir := b.TempDir()
	bare := b.TempDir()
	for _, c := range [][]string{
		{"build", "-o", filepath.Join(dir, "myco"), "."},
		{"build", "-o", filepath.Join(dir, "myco-fence"), "../myco-fence"},
		{"build", "-o", filepath.Join(bare, "myco"), "."},
	} {
		cmd := exec.Command("go", c...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go %v: %v\n%s", c, err, out)
		}
	}
	return benchBins{myco: filepath.Join(dir, "myco"), bare: filepath.Join(bare, "myco")}
}
