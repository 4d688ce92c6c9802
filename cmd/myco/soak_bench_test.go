package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"myco.dev/api"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/procstat"
)

// soakSessions is how many sessions a soak run makes, one turn each; soakWindow is how many
// turns the first and the last throughput are measured over.
const (
	soakSessions = 1000
	soakWindow   = 200
	soakDrivers  = 4   // clients that create, submit and wait, at once
	soakIdlers   = 200 // event-stream clients that never read, in the second run
)

// BenchmarkSoak runs 1,000 sessions with one turn each on one real server, twice: alone, and
// with 200 clients of /api/events that never read. It reports the turns per second of the
// first and of the last 200 turns (goal: last/first >= 0.9: a turn's cost must not grow with
// the sessions opened before it), the worker's resident memory after 200 turns and at the
// end (goal: under 10 MiB of growth), and the p99 latency of events to a client that reads
// (goal: with the idle clients within 2x of without).
func BenchmarkSoak(b *testing.B) {
	alone := soak(b, 0)
	idle := soak(b, soakIdlers)
	for b.Loop() {
	}
	b.ReportMetric(alone.firstRate, "turns/s-first-200")
	b.ReportMetric(alone.lastRate, "turns/s-last-200")
	b.ReportMetric(alone.lastRate/alone.firstRate, "x-last/first")
	b.ReportMetric(float64(alone.rss200)/1024, "MiB-rss-after-200")
	b.ReportMetric(float64(alone.rssEnd)/1024, "MiB-rss-end")
	b.ReportMetric(float64(alone.rssEnd-alone.rss200)/1024, "MiB-rss-growth")
	b.ReportMetric(float64(alone.p99.Microseconds())/1000, "ms-p99-event")
	b.ReportMetric(idle.firstRate, "turns/s-first-200-idle-clients")
	b.ReportMetric(idle.lastRate, "turns/s-last-200-idle-clients")
	b.ReportMetric(float64(idle.p99.Microseconds())/1000, "ms-p99-event-idle-clients")
	b.ReportMetric(float64(idle.p99)/float64(alone.p99), "x-p99-idle/alone")
	b.ReportMetric(float64(idle.rssEnd)/1024, "MiB-rss-end-idle-clients")
}

type soakResult struct {
	firstRate, lastRate float64 // turns per second
	rss200, rssEnd      int64   // KiB
	p99                 time.Duration
}

// soak runs one soak: a fresh server, idlers clients that never read, and soakSessions
// turns by soakDrivers clients while one client reads every event. A turn is a create, a
// submit, the wait for its end (from the event stream) and a read of the snapshot, as a
// parent agent does with a child.
func soak(b *testing.B, idlers int) soakResult {
	fake := fakemodel.New(b)
	fake.Loop()
	fake.Script(fakemodel.Turn{Text: "Done: the answer is 42.", Usage: fakemodel.Usage{Input: 1200, Output: 9}})
	home := profileHome(b, "anthropic-messages", fake.URL, "")
	cmd, u, _ := startServer(b, home)
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	base := strings.TrimSuffix(u, "/") + "/api"
	root := strings.TrimSuffix(u, "/profiles/default/")
	host := strings.TrimPrefix(root, "http://")

	// The reader: every event of the profile, its latency from publication, and the end of
	// each session's turn.
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	var mu sync.Mutex // guards ended and lat
	ended := map[string]chan struct{}{}
	var lat []time.Duration
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	go func() {
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
			now := time.Now()
			mu.Lock()
			lat = append(lat, now.Sub(ev.Info().Time))
			if st, ok := ev.(api.StateEvent); ok && !st.Busy && st.Job == "turn" {
				if ch := ended[st.Session]; ch != nil {
					close(ch)
					delete(ended, st.Session)
				}
			}
			mu.Unlock()
		}
	}()

	// Clients that open the event stream and never read it.
	var idle []net.Conn
	for range idlers {
		c, err := net.Dial("tcp", host)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /profiles/default/api/events HTTP/1.1\r\nHost: %s\r\n\r\n", host)
		idle = append(idle, c)
	}
	// Each has its stream's headers before the turns start: it is subscribed, and what is
	// measured is the cost of its not reading, not of its connecting.
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := readHead(c); err != nil {
			b.Fatalf("an idle client's event stream: %v", err)
		}
	}

	post := func(path, body string) map[string]any {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode >= 300 {
			b.Fatalf("POST %s = %d %v", path, resp.StatusCode, out)
		}
		return out
	}
	pid := workerPID(b, root, "default")
	var done []time.Time // when each turn ended, in order
	var rss200 int64
	next := make(chan int)
	var wg sync.WaitGroup
	var doneMu sync.Mutex
	start := time.Now()
	for range soakDrivers {
		wg.Go(func() {
			for i := range next {
				id := post("/sessions", fmt.Sprintf(`{"request_id":"soak-%d"}`, i))["session_id"].(string)
				ch := make(chan struct{})
				mu.Lock()
				ended[id] = ch
				mu.Unlock()
				post("/sessions/"+id+"/actions", fmt.Sprintf(`{"request_id":"soak-%d-s","action":"submit","text":"what is six times seven?"}`, i))
				select {
				case <-ch:
				case <-time.After(30 * time.Second):
					b.Errorf("session %s: no end of its turn after 30 s", id)
					return
				}
				// What a parent agent does next: read the child's answer.
				resp, err := http.Get(base + "/sessions/" + id)
				if err != nil {
					b.Error(err)
					return
				}
				var snap struct{ Answer string }
				json.NewDecoder(resp.Body).Decode(&snap)
				resp.Body.Close()
				if snap.Answer != "Done: the answer is 42." {
					b.Errorf("session %s answered %q", id, snap.Answer)
				}
				doneMu.Lock()
				done = append(done, time.Now())
				if len(done) == soakWindow {
					rss200 = procstat.KiB(pid, "VmRSS")
				}
				doneMu.Unlock()
			}
		})
	}
	for i := range soakSessions {
		next <- i
	}
	close(next)
	wg.Wait()
	rssEnd := procstat.KiB(pid, "VmRSS")
	if len(done) != soakSessions {
		b.Fatalf("%d turns ended, want %d", len(done), soakSessions)
	}
	mu.Lock()
	p := slices.Clone(lat)
	mu.Unlock()
	if testing.Verbose() {
		for q := range 10 {
			part := slices.Clone(p[q*len(p)/10 : (q+1)*len(p)/10])
			slices.Sort(part)
			b.Logf("idlers %d: p99 of the events %d0-%d0%%: %v", idlers, q, q+1, part[len(part)*99/100])
		}
	}
	slices.Sort(p)
	n := len(done)
	return soakResult{
		firstRate: soakWindow / done[soakWindow-1].Sub(start).Seconds(),
		lastRate:  soakWindow / done[n-1].Sub(done[n-1-soakWindow]).Seconds(),
		rss200:    rss200, rssEnd: rssEnd,
		p99: p[len(p)*99/100],
	}
}

// readHead reads c up to the end of an HTTP response's head, a byte at a time so that
// nothing after it is read, and fails unless its status is 200.
func readHead(c net.Conn) error {
	var head []byte
	b := make([]byte, 1)
	for !strings.HasSuffix(string(head), "\r\n\r\n") {
		if _, err := c.Read(b); err != nil {
			return err
		}
		head = append(head, b[0])
	}
	if !strings.HasPrefix(string(head), "HTTP/1.1 200 ") {
		return fmt.Errorf("answered %q", head)
	}
	return nil
}
