package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"myco.dev/internal/fakemodel"
	"myco.dev/internal/otheruser"
)

// scrapeMetrics gets url (a server's /metrics) with header and reads it with the
// Prometheus text parser.
func scrapeMetrics(t *testing.T, url string, header http.Header) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("GET %s = %d %s\n%s", url, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse %s: %v\n%s", url, err, body)
	}
	return fams
}

// metricValue returns the value of family name's sample whose labels are exactly want
// (a histogram's is its count), and whether there is one.
func metricValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
next:
	for _, m := range fams[name].GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// writeProfile writes profile name's config under home: model key served by url, with
// extra appended.
func writeProfile(t *testing.T, home, name, key, url, extra string) {
	t.Helper()
	dir := filepath.Join(home, "profiles", name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "[models." + key + "]\nprotocol = \"anthropic-messages\"\nbase_url = \"" + url + "\"\ncontext_window = 100000\n" + extra
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// openStream opens an event stream at url and returns its reader once its headers came;
// it is closed when the test ends.
func openStream(t *testing.T, url string) *bufio.Reader {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d", url, resp.StatusCode)
	}
	return bufio.NewReader(resp.Body)
}

// TestMetrics runs a server with two profiles: in default a turn that runs a bash command
// and answers, in work one that fails after the gateway answered 529 to each of its three
// attempts. The server's /metrics, read by the Prometheus parser, then holds both
// workers' counts, each with its profile, and the server's own: turns by outcome, the
// tool call, tokens by kind, model requests by status (the retried 529s too) and retries,
// the latency histograms' counts, the sessions open and the event streams open (a page's,
// relayed through the browser's one stream, and the API's). Another user's request is
// refused, and with --auth token a request without the token is.
func TestMetrics(t *testing.T) {
	usage := fakemodel.Usage{Input: 100, Output: 20, CacheRead: 50, CacheWrite: 10}
	personal := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"echo counted"}`}}, Usage: usage},
		fakemodel.Turn{Text: "it printed {{tool_result}}", Usage: usage})
	overloaded := fakemodel.Turn{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded"}
	work := fakemodel.New(t, overloaded, overloaded, overloaded)
	home := t.TempDir()
	writeProfile(t, home, "default", "m1", personal.URL, "")
	writeProfile(t, home, "work", "m2", work.URL, "[models.m2.retry]\nmax_attempts = 3\ninitial_backoff_ms = 1\nmax_backoff_ms = 5\n")
	_, u, stderr := startServer(t, home)
	root := strings.TrimSuffix(u, "/profiles/default/")

	id, snap := apiClient{t, root + "/profiles/default/api"}.run("a", "count this")
	if !strings.HasPrefix(fmt.Sprint(snap["answer"]), "it printed counted") {
		t.Fatalf("default's turn: %v\n%s", snap, stderr)
	}
	_, snap = apiClient{t, root + "/profiles/work/api"}.run("a", "fail")
	if le, _ := snap["last_error"].(map[string]any); le["code"] != "overloaded" {
		t.Fatalf("work's turn: %v", snap)
	}

	// A browser's stream, a page's session stream through it, and an API stream.
	browser := openStream(t, root+"/events")
	var stream string
	for stream == "" {
		line, err := browser.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var hello struct{ Type, Stream string }
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && json.Unmarshal([]byte(data), &hello) == nil && hello.Type == "hello" {
			stream = hello.Stream
		}
	}
	sub := `{"op":"subscribe","sub":"p1","url":"/profiles/default/s/` + id + `/events","after":""}`
	resp, err := http.Post(root+"/events/"+stream, "application/json", strings.NewReader(sub))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("subscribe = %d", resp.StatusCode)
	}
	openStream(t, root+"/profiles/default/api/events")

	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		fams = scrapeMetrics(t, root+"/metrics", nil)
		// The counts come from the updates, which the metrics read a moment after the
		// turn's end; the streams count once the relay reached the worker.
		page, _ := metricValue(fams, "myco_event_streams", map[string]string{"profile": "default", "kind": "page"})
		api, _ := metricValue(fams, "myco_event_streams", map[string]string{"profile": "default", "kind": "api"})
		done, _ := metricValue(fams, "myco_turns_total", map[string]string{"profile": "default", "outcome": "done"})
		failed, _ := metricValue(fams, "myco_turns_total", map[string]string{"profile": "work", "outcome": "overloaded"})
		if page == 1 && api == 1 && done == 1 && failed == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("event streams page %v, api %v, turns done %v, overloaded %v; want 1 each", page, api, done, failed)
		}
	}
	d := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tt := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"myco_turns_total", d("profile", "default", "outcome", "done"), 1},
		{"myco_turns_total", d("profile", "default", "outcome", "overloaded"), 0},
		{"myco_turns_total", d("profile", "work", "outcome", "overloaded"), 1},
		{"myco_turns_total", d("profile", "work", "outcome", "done"), 0},
		{"myco_turn_seconds", d("profile", "default"), 1},
		{"myco_turn_seconds", d("profile", "work"), 1},
		{"myco_tool_calls_total", d("profile", "default", "tool", "bash", "outcome", "ok"), 1},
		{"myco_model_tokens_total", d("profile", "default", "model", "m1", "kind", "input"), 2 * 160},
		{"myco_model_tokens_total", d("profile", "default", "model", "m1", "kind", "output"), 2 * 20},
		{"myco_model_tokens_total", d("profile", "default", "model", "m1", "kind", "cache_read"), 2 * 50},
		{"myco_model_tokens_total", d("profile", "default", "model", "m1", "kind", "cache_write"), 2 * 10},
		{"myco_model_requests_total", d("profile", "default", "model", "m1", "status", "200"), 2},
		{"myco_model_requests_total", d("profile", "work", "model", "m2", "status", "529"), 3},
		{"myco_model_retries_total", d("profile", "work", "model", "m2"), 2},
		{"myco_model_request_seconds", d("profile", "default", "model", "m1"), 2},
		{"myco_model_request_seconds", d("profile", "work", "model", "m2"), 3},
		{"myco_model_first_token_seconds", d("profile", "default", "model", "m1"), 2},
		{"myco_sessions_open", d("profile", "default"), 1},
		{"myco_sessions_open", d("profile", "work"), 1},
		{"myco_sessions_busy", d("profile", "default"), 0},
		{"myco_event_streams", d("profile", "work", "kind", "api"), 0},
		{"myco_browser_streams", nil, 1},
		{"myco_worker_running", d("profile", "default"), 1},
		{"myco_worker_running", d("profile", "work"), 1},
		{"myco_worker_crashes_total", d("profile", "work"), 0},
		{"myco_worker_metrics_gathered", d("profile", "default"), 1},
		{"myco_worker_metrics_gathered", d("profile", "work"), 1},
		{"myco_metrics_missed_total", d("profile", "default"), 0},
	} {
		if got, ok := metricValue(fams, tt.family, tt.labels); !ok || got != tt.want {
			t.Errorf("%s%v = %v (there: %v), want %v", tt.family, tt.labels, got, ok, tt.want)
		}
	}
	if _, ok := metricValue(fams, "myco_model_first_token_seconds", d("profile", "work", "model", "m2")); ok {
		t.Error("work's 529s have a first token")
	}
	// A profile's own, at its address: only its samples.
	own := scrapeMetrics(t, root+"/profiles/work/metrics", nil)
	if v, ok := metricValue(own, "myco_turns_total", d("profile", "work", "outcome", "overloaded")); !ok || v != 1 {
		t.Errorf("work's /metrics: turns overloaded = %v, %v", v, ok)
	}
	if _, ok := metricValue(own, "myco_turns_total", d("profile", "default", "outcome", "done")); ok {
		t.Error("work's /metrics has default's samples")
	}

	t.Run("another user", func(t *testing.T) {
		addr := strings.TrimPrefix(root, "http://")
		var c net.Conn
		otheruser.Do(t, otheruser.UID, func() { c, err = net.Dial("tcp", addr) })
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		got, _ := io.ReadAll(c)
		if !strings.HasPrefix(string(got), "HTTP/1.1 403 ") || !strings.Contains(string(got), `"code": "not_owner"`) || strings.Contains(string(got), "myco_") {
			t.Errorf("another user's GET /metrics = %q, want a 403 not_owner", got)
		}
	})

	t.Run("token", func(t *testing.T) {
		thome := t.TempDir()
		writeProfile(t, thome, "default", "m1", "http://127.0.0.1:9", "")
		_, turl, _ := startServer(t, thome, "--auth", "token")
		parsed, err := url.Parse(turl)
		if err != nil {
			t.Fatal(err)
		}
		token := parsed.Query().Get("token")
		troot := "http://" + parsed.Host
		resp, err := http.Get(troot + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET /metrics without the token = %d, want 403", resp.StatusCode)
		}
		// With it (a scraper's bearer token), the launch profile's worker is gathered: the
		// server sent it the token too.
		fams := scrapeMetrics(t, troot+"/metrics", http.Header{"Authorization": {"Bearer " + token}})
		if v, ok := metricValue(fams, "myco_worker_metrics_gathered", d("profile", "default")); !ok || v != 1 {
			t.Errorf("myco_worker_metrics_gathered{default} in token mode = %v, %v; want 1", v, ok)
		}
		if _, ok := metricValue(fams, "myco_turns_total", d("profile", "default", "outcome", "done")); !ok {
			t.Error("the worker's families are not in token mode's /metrics")
		}
	})
}
