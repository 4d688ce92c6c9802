package handlers

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"testing"
	"time"

	"myco.dev/internal/sessiongen"
)

// BenchmarkSessionsList (issue 32): the sessions page (by project and by date) and the
// API's list page over 60 and 10,000 sessions of 50 messages, warm (each file's metadata
// and row read once, then only what was appended): a page must not cost what the store
// holds. It reports the medians and the 10,000/60 ratio; the target is under 100 ms warm.
func BenchmarkSessionsList(b *testing.B) {
	dirs := []string{"/home/u/src/alpha", "/home/u/src/beta", "/home/u/notes", "/srv/gamma", "/tmp/x"}
	median := func(b *testing.B, ts *testServer, path string) time.Duration {
		var ds []time.Duration
		for range 15 {
			start := time.Now()
			resp, err := http.Get(ts.URL + path)
			if err != nil {
				b.Fatal(err)
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			ds = append(ds, time.Since(start))
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("GET %s = %d %v", path, resp.StatusCode, err)
			}
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	for range b.N {
		got := map[int]map[string]time.Duration{}
		for _, n := range []int{60, 10_000} {
			ts := newTestServer(b)
			if _, err := sessiongen.Write(ts.mgr.Store().Dir(), sessiongen.Options{Sessions: n, Messages: 50, Dirs: dirs}); err != nil {
				b.Fatal(err)
			}
			cold := time.Now()
			if _, err := ts.mgr.List(b.Context(), sessionsAll()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(time.Since(cold).Milliseconds()), fmt.Sprintf("cold-ms-%d", n))
			got[n] = map[string]time.Duration{
				"project": median(b, ts, "/profiles/default/"),
				"date":    median(b, ts, "/profiles/default/?view=date"),
				"api":     median(b, ts, "/profiles/default/api/sessions?limit=100"),
			}
		}
		for _, k := range []string{"project", "date", "api"} {
			b.ReportMetric(float64(got[10_000][k].Microseconds())/1000, k+"-10k-ms")
			b.ReportMetric(float64(got[10_000][k])/float64(got[60][k]), k+"-10k/60")
		}
	}
}
