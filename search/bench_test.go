package search

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"myco.dev/internal/sessiongen"
)

// BenchmarkSearch10k (issue 32): the index of 10,000 sessions of 50 messages built from
// nothing (target: under 60 s), then searches of a word, two words, a phrase and a prefix,
// each newest first with its snippets (targets: p50 under 30 ms, p99 under 100 ms), and
// the same searches over 60 sessions for the ratio.
func BenchmarkSearch10k(b *testing.B) {
	queries := []string{"lexer", "parser token", `"fix the bug"`, "goroutine deadline", "budg", "middleware logger", "socket"}
	measure := func(b *testing.B, n int) (build time.Duration, p50, p99 time.Duration) {
		dir := b.TempDir()
		if _, err := sessiongen.Write(dir, sessiongen.Options{Sessions: n, Messages: 50, Dirs: []string{"/a", "/b", "/c"}, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		m := newManager(b, dir)
		ix, err := Open(b.Context(), Options{Path: filepath.Join(b.TempDir(), "search.db"), Source: m})
		if err != nil {
			b.Fatal(err)
		}
		defer ix.Close()
		start := time.Now()
		if err := ix.catchUp(context.Background()); err != nil {
			b.Fatal(err)
		}
		build = time.Since(start)
		var ds []time.Duration
		for i := range 300 {
			t := time.Now()
			if _, err := ix.Search(b.Context(), Query{Text: queries[i%len(queries)]}); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return build, ds[len(ds)/2], ds[len(ds)*99/100]
	}
	for range b.N {
		_, s50, _ := measure(b, 60)
		build, p50, p99 := measure(b, 10_000)
		b.ReportMetric(build.Seconds(), "build-10k-s")
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(p50)/float64(s50), "p50-10k/60")
	}
}
