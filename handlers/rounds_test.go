package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/procstat"
	"myco.dev/sessions"
)

// roundsOptions says what runRounds runs.
type roundsOptions struct {
	children, clients int
	cut               int // the clients from this index on are cut once a round
	rounds            int
	// compactEvery makes every compactEvery-th round a compaction of every session rather
	// than a turn; 0 for none.
	compactEvery int
	keepOpen     bool // the service keeps every session open (no idle one is closed)
}

// compacts reports whether round r is a compaction round.
func (o roundsOptions) compacts(r int) bool {
	return o.compactEvery > 0 && r%o.compactEvery == o.compactEvery-1
}

// roundsResult is what a run of rounds measured.
type roundsResult struct {
	rates     []float64     // turns per second of each round of turns
	cpu       []float64     // CPU seconds of this process per turn, in each round of turns
	resets    int           // reset events, over every client
	resumes   int           // reconnections with Last-Event-ID, over every client
	unresumed int           // cut clients that never resumed
	ended     int           // connections the server ended, over every client
	oldest    time.Duration // the oldest cursor a client resumed from
	missed    int           // accepted and done events that a client did not get, over every client
	events    int           // events the client that was never cut received
	peakRSS   int64         // KiB, of this process
	fails     []string
}

// median returns the median of xs[from:to]: one slow round of a noisy machine does not
// move it.
func median(xs []float64, from, to int) float64 {
	s := slices.Sorted(slices.Values(xs[from:to]))
	return s[len(s)/2]
}

// cpuTime returns the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// roundsClient is one reader of the profile's /api/events. A cut client drops its
// connection once per round, after reading cutAfter of the round's events, and resumes
// with Last-Event-ID when the next round starts, by which time the sessions whose events
// it has not read have ended their turns and closed.
type roundsClient struct {
	drive    *roundsDrive
	cutAfter int           // the round's events read before the cut; 0 for never
	cutRound int           // the last round in which it cut, -1 for none
	inRound  int           // the events of round cutRound+1 or later read on this connection
	complete chan struct{} // closed once it has read up to target

	mu       sync.Mutex // guards the fields below
	target   uint64     // the sequence number to read up to; 0 until the drive ended
	last     uint64     // the sequence number of the last event read
	ids      []uint64
	cursor   string    // the last event id read
	cursorAt time.Time // when
	accepted map[string]int
	done     map[string]int
	resets   int
	resumes  int
	ended    int // connections the server ended
	oldest   time.Duration
}

// roundsDrive is the drive's progress, which the cut clients wait on.
type roundsDrive struct {
	started []chan struct{} // started[r] is closed when round r starts; started[rounds] at the end

	mu    sync.Mutex // guards the fields below
	round int        // the round running now; rounds once they have all ended
	from  uint64     // the newest event's sequence number when it started
}

// now returns the round running now and the sequence number it started after.
func (d *roundsDrive) now() (round int, from uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.round, d.from
}

// start starts round r after event seq, which wakes the clients waiting for it.
func (d *roundsDrive) start(r int, seq uint64) {
	d.mu.Lock()
	d.round, d.from = r, seq
	d.mu.Unlock()
	close(d.started[r])
}

// How a connection of a client ended.
const (
	connCut    = iota // the client cut it
	connEnded         // the server ended it (it cuts a client that stays behind)
	connFailed        // it could not be made
)

// read reads one connection of the stream from the client's cursor and says how it ended.
func (c *roundsClient) read(ctx context.Context, url string) int {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	c.inRound = 0
	c.mu.Lock()
	if c.resumes++; c.cursor != "" {
		req.Header.Set("Last-Event-ID", c.cursor)
		c.oldest = max(c.oldest, time.Since(c.cursorAt))
	}
	c.mu.Unlock()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return connFailed
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return connFailed
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	id := ""
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			id = v
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var u struct {
			Type    string `json:"type"`
			Session string `json:"session"`
			Seq     uint64 `json:"seq"`
			Busy    *bool  `json:"busy"`
		}
		if json.Unmarshal([]byte(data), &u) != nil || u.Type == "ping" {
			continue
		}
		c.mu.Lock()
		c.cursor, c.cursorAt = id, time.Now()
		switch u.Type {
		case "reset":
			c.resets++
		case "accepted":
			c.accepted[u.Session]++
		case "done":
			c.done[u.Session]++
		}
		if u.Type != "reset" {
			c.ids = append(c.ids, u.Seq)
		}
		c.last = max(c.last, u.Seq)
		c.reached()
		c.mu.Unlock()
		if c.cut(u.Seq) {
			return connCut
		}
	}
	return connEnded
}

// cut reports whether a cut client cuts its connection after reading event seq: once per
// round, after cutAfter of the round's events (not of the replay of the round before).
func (c *roundsClient) cut(seq uint64) bool {
	r, from := c.drive.now()
	if c.cutAfter == 0 || r >= len(c.drive.started)-1 || r <= c.cutRound || seq <= from {
		return false
	}
	if c.inRound++; c.inRound < c.cutAfter {
		return false
	}
	c.cutRound, c.inRound = r, 0
	return true
}

// reached closes complete when the client has read up to its target; call with c.mu held.
func (c *roundsClient) reached() {
	if c.target > 0 && c.last >= c.target && !isDone(c.complete) {
		close(c.complete)
	}
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// runRounds makes o.children child sessions of one parent and runs rounds of one turn (or
// compaction) in each, all at once, while o.clients readers follow /api/events from before
// the first round; the clients from index o.cut on drop their connection once a round and
// resume. It checks that every client got every event once and in order, no reset, and
// every turn's accepted and done.
func runRounds(t testing.TB, o roundsOptions) roundsResult {
	children, clients, cut, rounds := o.children, o.clients, o.cut, o.rounds
	answer := strings.Repeat("streamed words ", 20)
	idleKeep := 0
	if o.keepOpen {
		idleKeep = children + 1
	}
	ts := newTestServerIdle(t, idleKeep, fakemodel.Turn{Text: answer, ChunkSize: 15})
	ts.fake.Loop()
	// The children's model requests reuse their connections (the default transport keeps
	// two idle ones), so that the run does not leave thousands of sockets in TIME_WAIT,
	// which a stream's pacing reads through where sock_diag is refused. They close 2 s
	// after the last turn, before the goroutines are counted.
	ts.client.HTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: children, IdleConnTimeout: 2 * time.Second}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := runtime.NumGoroutine()
	var res roundsResult
	_, parent := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "parent"})
	pid := parent["session_id"].(string)
	ids := make([]string, children)
	for i := range ids {
		id, _, err := ts.mgr.CreateRequest(ctx, "child-"+strconv.Itoa(i), childOptions(pid))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}

	seqOf := func(id string) uint64 {
		_, seq, _ := strings.Cut(id, "-")
		n, _ := strconv.ParseUint(seq, 10, 64)
		return n
	}
	drive := &roundsDrive{started: make([]chan struct{}, rounds+1)}
	for r := range drive.started {
		drive.started[r] = make(chan struct{})
	}
	url := ts.URL + "/profiles/default/api/events?after=" + ts.mgr.EventID()
	readers := make([]*roundsClient, clients)
	var wg sync.WaitGroup
	for i := range readers {
		c := &roundsClient{drive: drive, cutRound: -1, complete: make(chan struct{}), accepted: map[string]int{}, done: map[string]int{}}
		if i >= cut {
			c.cutAfter = 40 + 23*i
		}
		readers[i] = c
		wg.Go(func() {
			for ctx.Err() == nil {
				switch c.read(ctx, url) {
				case connFailed:
					return
				case connEnded: // resume at once, as a client does after any drop
					if ctx.Err() != nil {
						return
					}
					c.mu.Lock()
					c.ended++
					c.mu.Unlock()
					continue
				}
				// Cut: come back when the next round starts (or the drive ended).
				select {
				case <-drive.started[c.cutRound+1]:
				case <-ctx.Done():
					return
				}
			}
		})
	}

	for r := range rounds {
		drive.start(r, seqOf(ts.mgr.EventID()))
		start, cpu := time.Now(), cpuTime()
		var turns sync.WaitGroup
		errs := make(chan string, children)
		for i, id := range ids {
			turns.Go(func() {
				var j *sessions.Job
				var err error
				if o.compacts(r) {
					j, err = ts.mgr.Compact(ctx, id)
				} else {
					j, err = ts.mgr.Submit(ctx, id, model.TextPart(fmt.Sprintf("task %d of round %d", i, r)))
				}
				if err == nil {
					_, err = j.Wait(ctx)
				}
				if err != nil {
					errs <- fmt.Sprintf("round %d, session %s: %v", r, id, err)
				}
			})
		}
		turns.Wait()
		close(errs)
		for e := range errs {
			res.fails = append(res.fails, e)
		}
		if !o.compacts(r) {
			res.rates = append(res.rates, float64(children)/time.Since(start).Seconds())
			res.cpu = append(res.cpu, (cpuTime()-cpu).Seconds()/float64(children))
		}
	}
	// Every event of the turns is published before its job's Wait returns: each client reads
	// up to the newest one.
	target := seqOf(ts.mgr.EventID())
	drive.start(rounds, target)
	wait, stop := context.WithTimeout(ctx, 60*time.Second)
	defer stop()
	for i, c := range readers {
		c.mu.Lock()
		c.target = target
		c.reached()
		c.mu.Unlock()
		select {
		case <-c.complete:
		case <-wait.Done():
			c.mu.Lock()
			res.fails = append(res.fails, fmt.Sprintf("client %d read up to event %d of %d", i, c.last, target))
			c.mu.Unlock()
		}
	}
	cancel()
	wg.Wait()

	// Every client's events, up to the last that every client read, are the same ones.
	limit := uint64(0)
	for i, c := range readers {
		if len(c.ids) == 0 {
			res.fails = append(res.fails, fmt.Sprintf("client %d read no event", i))
			continue
		}
		if last := c.ids[len(c.ids)-1]; limit == 0 || last < limit {
			limit = last
		}
	}
	upTo := func(ids []uint64) []uint64 {
		n, _ := slices.BinarySearch(ids, limit+1)
		return ids[:n]
	}
	first := upTo(readers[0].ids)
	res.events = len(first)
	for i, c := range readers {
		res.resets += c.resets
		res.resumes += c.resumes - 1
		if c.cutAfter > 0 && c.resumes < 2 {
			res.unresumed++
		}
		res.ended += c.ended
		res.oldest = max(res.oldest, c.oldest)
		if c.resets > 0 {
			res.fails = append(res.fails, fmt.Sprintf("client %d got %d resets", i, c.resets))
		}
		for j := 1; j < len(c.ids); j++ {
			if c.ids[j] <= c.ids[j-1] {
				res.fails = append(res.fails, fmt.Sprintf("client %d: event %d after %d", i, c.ids[j], c.ids[j-1]))
				break
			}
		}
		if got := upTo(c.ids); !slices.Equal(got, first) {
			res.fails = append(res.fails, fmt.Sprintf("client %d read %d events up to %d, client 0 %d: they differ", i, len(got), limit, len(first)))
		}
		missed := 0
		for _, id := range ids {
			// A compaction ends with done too; only a turn is accepted.
			missed += max(0, len(res.rates)-c.accepted[id]) + max(0, rounds-c.done[id])
		}
		if missed > 0 {
			res.fails = append(res.fails, fmt.Sprintf("client %d missed %d accepted and done events", i, missed))
		}
		res.missed += missed
	}
	res.peakRSS = procstat.KiB(0, "VmHWM")
	if f := closeLoad(ts, base); f != "" {
		res.fails = append(res.fails, f)
	}
	return res
}

// TestLoad100ChildrenResume runs three rounds of a turn in each of 100 child sessions, far
// more than the idle sessions kept open, while 20 clients read every session's events;
// 15 of them drop their connection in every round (when they read enough of its events
// while it runs) and resume with Last-Event-ID once the sessions whose events they missed
// have closed. Every client gets every event once and in
// order, every turn's accepted and done, and no reset.
func TestLoad100ChildrenResume(t *testing.T) {
	res := runRounds(t, roundsOptions{children: 100, clients: 20, cut: 5, rounds: 3})
	for _, f := range res.fails {
		t.Error(f)
	}
	if res.unresumed > 0 {
		t.Errorf("%d of the 15 cut clients never resumed: the test cut too few", res.unresumed)
	}
	t.Logf("%d events per client, %d resumes (%d after the server ended a stream; the oldest cursor %v old), %d resets, %d accepted/done missed, turns/s by round %.0f, peak RSS %d MiB",
		res.events, res.resumes, res.ended, res.oldest.Round(time.Millisecond), res.resets, res.missed, res.rates, res.peakRSS/1024)
}

// BenchmarkLoad100ChildrenRounds runs 66 rounds in each of 100 child sessions while 20
// clients read every event, 15 of them cut and resumed once a round: a turn, and every
// eleventh round a compaction, so that a child's request stays short while its file grows
// (to some 80 KiB), as a long-lived session's does. The 68 children beyond IdleKeep close
// after every round and reopen for the next. It reports the throughput of the first and
// the last 10 rounds of turns (the median of each) and their ratio (goal: last/first >=
// 0.9, which it checks: a reopen must not cost more as the file grows), as turns per second
// and as turns per CPU second of the process (the machine's other work moves it less), the
// resets and missed accepted/done events over every client (goal: 0), and the peak RSS.
func BenchmarkLoad100ChildrenRounds(b *testing.B) {
	const window = 10
	res := runRounds(b, roundsOptions{children: 100, clients: 20, cut: 5, rounds: 66, compactEvery: 11})
	n := len(res.rates)
	first, last := median(res.rates, 0, window), median(res.rates, n-window, n)
	cpuFirst, cpuLast := 1/median(res.cpu, 0, window), 1/median(res.cpu, n-window, n)
	b.Logf("turns/s first %.0f, last %.0f (x%.2f); turns per CPU second first %.0f, last %.0f (x%.2f); %d resets, %d accepted/done missed, %d resumes (%d after the server ended a stream; the oldest cursor %v old), peak RSS %d MiB",
		first, last, last/first, cpuFirst, cpuLast, cpuLast/cpuFirst, res.resets, res.missed, res.resumes, res.ended, res.oldest.Round(time.Millisecond), res.peakRSS/1024)
	for i, f := range res.fails {
		if i == 40 {
			b.Errorf("and %d more", len(res.fails)-i)
			break
		}
		b.Error(f)
	}
	for b.Loop() {
	}
	b.ReportMetric(first, "turns/s-first-10")
	b.ReportMetric(last, "turns/s-last-10")
	b.ReportMetric(last/first, "x-last/first")
	b.ReportMetric(cpuFirst, "turns/cpu-s-first-10")
	b.ReportMetric(cpuLast, "turns/cpu-s-last-10")
	b.ReportMetric(cpuLast/cpuFirst, "x-cpu-last/first")
	b.ReportMetric(float64(res.resets), "resets")
	b.ReportMetric(float64(res.missed), "missed-accepted-done")
	b.ReportMetric(float64(res.resumes), "resumes")
	b.ReportMetric(float64(res.peakRSS)/1024, "MiB-peak-rss")
	if last/first < 0.9 {
		b.Errorf("turns/s last/first = %.2f (%.0f -> %.0f), want >= 0.9", last/first, first, last)
	}
}
