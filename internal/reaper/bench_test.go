package reaper

import (
	"slices"
	"testing"
	"time"

	"myco.dev/hosts/tools"
)

// BenchmarkBashExec measures a bash tool exec of `true` without a reaper and with one (its
// process already started), and reports their ratio: the reaper's two pipe writes per
// call must not show.
func BenchmarkBashExec(b *testing.B) {
	needDriver(b)
	r := New(Options{Argv: []string{driver, "reaper", b.TempDir()}})
	defer r.Close()
	without := tools.NewBash(tools.BashOptions{})
	defer without.Close()
	with := tools.NewBash(tools.BashOptions{Reaper: r})
	defer with.Close()
	run := func(bash *tools.Bash) func() {
		return func() {
			if res := bash.Call(b.Context(), "bench", []byte(`{"command":"true"}`)); res.IsError {
				b.Fatalf("exec true = %+v", res)
			}
		}
	}
	run(with)() // starts the reaper
	const n = 30
	bare := median(n, run(without))
	reaped := median(n, run(with))
	for b.Loop() {
	}
	b.ReportMetric(float64(bare.Microseconds()), "µs/exec")
	b.ReportMetric(float64(reaped.Microseconds()), "µs/exec-reaper")
	b.ReportMetric(float64(reaped)/float64(bare), "x-without")
}

// median returns the median duration of n runs of f.
func median(n int, f func()) time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		start := time.Now()
		f()
		ds[i] = time.Since(start)
	}
	slices.Sort(ds)
	return ds[n/2]
}
