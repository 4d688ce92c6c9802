package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/sessions"
	"myco.dev/views"
)

// bigSession writes a session of n messages: turns of a user's question, an answer with
// Markdown and a tool call, the call's result and a closing answer.
func bigSession(b *testing.B, ts *testServer, n int) string {
	b.Helper()
	var entries []sessions.Entry
	now := time.Now().UTC()
	for i := 0; len(entries) < n; i++ {
		callID := fmt.Sprintf("call_%d", i)
		entries = append(entries,
			sessions.Entry{Message: model.Message{Role: model.User, Parts: []model.Part{model.TextPart(fmt.Sprintf("Step %d: please look at `parser.go` and fix the **failing** test.", i))}}, AcceptedAt: &now},
			sessions.Entry{Message: model.Message{Role: model.Assistant, Parts: []model.Part{
				model.TextPart("I'll check the test first:\n\n```go\nfunc TestParse(t *testing.T) {\n\tgot := Parse(\"a+b\")\n}\n```\n"),
				{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: callID, Name: "bash", Input: json.RawMessage(`{"command":"go test ./parser/ 2>&1 | tail -20"}`)}},
			}}},
			sessions.Entry{Message: model.Message{Role: model.User, Parts: []model.Part{{Kind: model.KindToolResult, ToolResult: &model.ToolResult{CallID: callID, Text: strings.Repeat("--- FAIL: TestParse (0.00s)\n", 10) + "[exit status 1]"}}}}},
			sessions.Entry{Message: model.Message{Role: model.Assistant, Parts: []model.Part{model.TextPart("The test fails because `Parse` drops the operator. | a | b |\n|---|---|\n| 1 | 2 |\n\nI'll fix it next.")}}},
		)
	}
	id := sessions.NewID(now)
	th := &sessions.Thread{ID: "t1", Created: now, Entries: entries[:n]}
	if err := ts.mgr.Store().Create(b.Context(), &sessions.Session{ID: id, Created: now, Title: "A long session", Threads: []*sessions.Thread{th}}); err != nil {
		b.Fatal(err)
	}
	return id
}

// BenchmarkTranscriptRender renders the whole transcript of a 2,000-message session, with
// the Markdown cache cold and warm, and the session page (its newest 300 messages), against
// a baseline: encoding the same 2,000 messages as JSON.
func BenchmarkTranscriptRender(b *testing.B) {
	ts := newTestServer(b)
	id := bigSession(b, ts, 2000)
	sess, _, err := ts.mgr.Snapshot(b.Context(), id)
	if err != nil {
		b.Fatal(err)
	}
	s := newServer(Deps{Profile: "default", Assets: nil, WorkspaceDir: ts.ws})
	th := sess.Latest()
	render := func() {
		p := s.projector(id, th)
		var out strings.Builder
		for _, m := range p.messages(0, len(th.Entries)) {
			views.Message(m).Render(context.Background(), &out)
		}
		if out.Len() < 100000 {
			b.Fatalf("rendered only %d bytes", out.Len())
		}
	}
	const n = 7
	base := medianOf(n, func() {
		json.Marshal(th.Entries)
	})
	cold := timeOnce(func() { render() })
	warm := medianOf(n, render)
	page := medianOf(n, func() {
		resp, err := http.Get(ts.URL + "/profiles/default/s/" + id + "/")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})
	for b.Loop() {
	}
	b.ReportMetric(ms(cold), "ms-2000-cold")
	b.ReportMetric(ms(warm), "ms-2000-warm")
	b.ReportMetric(ms(page), "ms-page-GET")
	b.ReportMetric(ms(base), "ms-json-baseline")
	b.ReportMetric(float64(warm)/float64(base), "x-json-baseline")
}

// BenchmarkDeltaLatency20Streams keeps 20 event streams of one session open and measures
// the time from a delta entering the session service to its being read on every stream.
func BenchmarkDeltaLatency20Streams(b *testing.B) {
	ts := newTestServer(b)
	id := bigSession(b, ts, 4)
	const streams = 20
	cursor := url.QueryEscape(ts.mgr.EventID())
	type got struct {
		stamp string
		at    time.Time
	}
	seen := make(chan got, 1024)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{}, streams)
	stamp := regexp.MustCompile(`d-(\d+)-d`)
	for range streams {
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/profiles/default/s/"+id+"/events?after="+cursor, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			defer resp.Body.Close()
			ready <- struct{}{}
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if m := stamp.FindStringSubmatch(sc.Text()); m != nil {
					seen <- got{m[1], time.Now()}
				}
			}
		})
	}
	for range streams {
		<-ready // subscribed: the handler subscribes before it sends the headers
	}
	var lat []time.Duration
	for i := range 30 {
		sent := time.Now()
		ts.mgr.Publish(sessions.Update{Type: sessions.UpdateTextDelta, Text: fmt.Sprintf("d-%d-d", i)})
		var last time.Time
		for range streams {
			g := <-seen
			if g.stamp != fmt.Sprint(i) {
				b.Fatalf("stream read delta %s, want %d", g.stamp, i)
			}
			last = g.at
		}
		lat = append(lat, last.Sub(sent))
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	for b.Loop() {
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(ms(lat[len(lat)/2]), "ms-p50-all-20")
	b.ReportMetric(ms(lat[len(lat)*9/10]), "ms-p90-all-20")
	b.ReportMetric(ms(lat[len(lat)/2])/5, "x-goal-5ms")
}

// BenchmarkFirstPageBytes loads a session page and every asset it names, as a first visit
// does, and reports the bytes against the goal of 100 KB.
func BenchmarkFirstPageBytes(b *testing.B) {
	ts := newTestServer(b)
	id := bigSession(b, ts, 40)
	get := func(path string) []byte {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Accept-Encoding", "gzip") // as browsers do; the bytes counted are the bytes sent
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("GET %s = %d", path, resp.StatusCode)
		}
		data, _ := io.ReadAll(resp.Body)
		return data
	}
	page := get("/profiles/default/s/" + id + "/")
	total := len(page)
	resp, err := http.Get(ts.URL + "/profiles/default/s/" + id + "/")
	if err != nil {
		b.Fatal(err)
	}
	plain, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range regexp.MustCompile(`(?:href|src)="(/static/[^"]+)"`).FindAllStringSubmatch(string(plain), -1) {
		total += len(get(m[1]))
	}
	for b.Loop() {
	}
	b.ReportMetric(float64(len(page))/1000, "KB-page")
	b.ReportMetric(float64(total)/1000, "KB-with-assets")
	b.ReportMetric(float64(total)/100000, "x-goal-100KB")
}

func medianOf(n int, f func()) time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = timeOnce(f)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[n/2]
}

func timeOnce(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
