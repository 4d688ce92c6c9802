package handlers

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/api"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/procstat"
	"myco.dev/sessions"
)

// loadResult is what a load run measured.
type loadResult struct {
	turns    int
	elapsed  time.Duration
	p99      time.Duration // from an event's publication to its arrival, over all clients
	events   int           // events each client received
	peakRSS  int64         // KiB, of this process
	failures []string
}

// eventClient is one /api/events reader that keeps every event's id, type and session.
type eventClient struct {
	mu     sync.Mutex // guards the fields below
	ids    []uint64
	done   map[string]bool // sessions whose turn ended (state busy false after done)
	lat    []time.Duration
	resets int
}

// runLoad creates children sessions of one parent through the API and drives a turn in
// each, all at once, while clients readers stay attached to the event stream.
func runLoad(t testing.TB, children, clients int) loadResult {
	answer := strings.Repeat("streamed words ", 20)
	ts := newTestServer(t, fakemodel.Turn{Text: answer, ChunkSize: 15})
	ts.fake.Loop()
	ts.tools.f = func(_ context.Context, c model.ToolCall) model.ToolResult {
		return model.ToolResult{CallID: c.ID, Text: "ok"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := runtime.NumGoroutine()
	cursor := ts.mgr.EventID()
	readers := make([]*eventClient, clients)
	var wg sync.WaitGroup
	for i := range readers {
		c := &eventClient{done: map[string]bool{}}
		readers[i] = c
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/profiles/default/api/events?after="+cursor, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer resp.Body.Close()
			rd := api.NewSSEReader(resp.Body)
			for {
				sse, err := rd.Next()
				if err != nil {
					return
				}
				ev, err := api.DecodeEvent([]byte(sse.Data))
				if err != nil {
					continue
				}
				if _, ping := ev.(api.PingEvent); ping {
					continue
				}
				u := ev.Info()
				now := time.Now()
				c.mu.Lock()
				switch ev := ev.(type) {
				case api.ResetEvent:
					c.resets++
				default:
					c.ids = append(c.ids, u.Seq)
					c.lat = append(c.lat, now.Sub(u.Time))
					if st, ok := ev.(api.StateEvent); ok && !st.Busy {
						c.done[u.Session] = true
					}
				}
				c.mu.Unlock()
			}
		})
	}
	_, parent := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "parent"})
	pid := parent["session_id"].(string)
	start := time.Now()
	ids := make([]string, children)
	var drive sync.WaitGroup
	errs := make(chan string, children)
	for i := range children {
		drive.Go(func() {
			id, _, err := ts.mgr.CreateRequest(ctx, "child-"+strconv.Itoa(i), childOptions(pid))
			if err != nil {
				errs <- err.Error()
				return
			}
			ids[i] = id
			if _, err := ts.mgr.SubmitRequest(ctx, id, "task-"+strconv.Itoa(i), sessions.Submission{Text: "task " + strconv.Itoa(i)}); err != nil {
				errs <- err.Error()
			}
		})
	}
	drive.Wait()
	close(errs)
	var res loadResult
	for e := range errs {
		res.failures = append(res.failures, e)
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, c := range readers {
		for {
			c.mu.Lock()
			n := len(c.done)
			c.mu.Unlock()
			if n >= children || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	res.elapsed = time.Since(start)
	time.Sleep(100 * time.Millisecond) // the last events of the stream, if any are left
	cancel()
	wg.Wait()
	for _, id := range ids {
		if id == "" {
			continue
		}
		_, st, err := ts.mgr.Snapshot(context.Background(), id)
		switch {
		case err != nil:
			res.failures = append(res.failures, err.Error())
		case st.Busy || st.LastTurn.Status != "done" || !strings.Contains(st.LastTurn.Answer, "streamed words"):
			res.failures = append(res.failures, fmt.Sprintf("session %s ended %q busy=%v", id, st.LastTurn.Status, st.Busy))
		default:
			res.turns++
		}
	}
	var lat []time.Duration
	first := readers[0].ids
	for i, c := range readers {
		if c.resets > 0 {
			res.failures = append(res.failures, fmt.Sprintf("client %d got %d resets", i, c.resets))
		}
		if len(c.done) != children {
			res.failures = append(res.failures, fmt.Sprintf("client %d saw %d of %d turns end", i, len(c.done), children))
		}
		for j := 1; j < len(c.ids); j++ {
			if c.ids[j] <= c.ids[j-1] {
				res.failures = append(res.failures, fmt.Sprintf("client %d: event %d after %d", i, c.ids[j], c.ids[j-1]))
				break
			}
		}
		if fmt.Sprint(c.ids) != fmt.Sprint(first) {
			res.failures = append(res.failures, fmt.Sprintf("client %d saw %d events, client 0 %d: they differ", i, len(c.ids), len(first)))
		}
		lat = append(lat, c.lat...)
	}
	res.events = len(first)
	if len(lat) > 0 {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		res.p99 = lat[len(lat)*99/100]
	}
	res.peakRSS = procstat.KiB(0, "VmHWM")
	if f := closeLoad(ts, base); f != "" {
		res.failures = append(res.failures, f)
	}
	return res
}

// closeLoad closes a load run's server and its session service, and says what goroutines
// outlived them ("" when none did beyond a few of the runtime's), base being how many ran
// before the run.
func closeLoad(ts *testServer, base int) string {
	ts.mgr.Close()
	ts.Close()
	ts.client.CloseIdleConnections() // each holds two goroutines until its idle timeout
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > base+5 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+5 {
		buf := make([]byte, 1<<16)
		return fmt.Sprintf("%d goroutines left, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
	return ""
}

// TestLoad50Children drives 50 child sessions at once while 20 clients read the event
// stream: every turn completes, every client gets every event once and in order, no reset,
// no goroutine left behind.
func TestLoad50Children(t *testing.T) {
	res := runLoad(t, 50, 20)
	for _, f := range res.failures {
		t.Error(f)
	}
	if res.turns != 50 {
		t.Errorf("%d turns completed, want 50", res.turns)
	}
	t.Logf("%d turns in %v, %d events per client, p99 event latency %v, peak RSS %d MiB", res.turns, res.elapsed, res.events, res.p99, res.peakRSS/1024)
}

func childOptions(parent string) sessions.CreateOptions {
	return sessions.CreateOptions{Parent: parent, Hidden: true}
}

// BenchmarkLoad50Children reports the load run's figures: turns per second, the p99 time
// from an event's publication to its arrival at 20 clients, and the peak RSS.
func BenchmarkLoad50Children(b *testing.B) {
	res := runLoad(b, 50, 20)
	for _, f := range res.failures {
		b.Error(f)
	}
	for b.Loop() {
	}
	b.ReportMetric(float64(res.turns)/res.elapsed.Seconds(), "turns/s")
	b.ReportMetric(ms(res.p99), "ms-p99-event")
	b.ReportMetric(float64(res.events), "events/client")
	b.ReportMetric(float64(res.peakRSS)/1024, "MiB-peak-rss")
}
