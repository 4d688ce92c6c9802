package engine

import (
	"bytes"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	promodel "github.com/prometheus/common/model"

	"myco.dev/agent/model"
	"myco.dev/sessions"
)

// scrape reads m's exposition with the Prometheus text parser.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	b := m.Registry.AppendText(nil)
	p := expfmt.NewTextParser(promodel.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, b)
	}
	return fams
}

// value returns the value of family name's sample with exactly the labels want (profile
// apart), and whether there is one; a histogram's is its count.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
next:
	for _, m := range fams[name].GetMetric() {
		labels := m.GetLabel()
		if len(labels) != len(want)+1 {
			continue
		}
		for _, l := range labels {
			if l.GetName() != "profile" && want[l.GetName()] != l.GetValue() {
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

// TestMetrics: the consumer of a session service's updates counts turns by outcome (a
// compaction is no turn) and tool calls by tool and outcome, until the service closes,
// having read what it published before; the observer of the model clients counts
// requests by status, retries, the latencies and tokens by kind.
func TestMetrics(t *testing.T) {
	m := NewMetrics("work")
	s, err := Degraded(profileAt(t, "x"), t.TempDir(), errors.New("broken"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(nil, "").Exact()
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.follow(t.Context(), s, sub)
	}()
	for _, u := range []sessions.Update{
		{Type: sessions.UpdateDone, Job: sessions.JobTurn, Duration: 2},
		{Type: sessions.UpdateError, Job: sessions.JobTurn, Code: "auth_failed", Duration: 0.5},
		{Type: sessions.UpdateCancelled, Job: sessions.JobTurn, Code: "stopped", Duration: 40},
		{Type: sessions.UpdateDone, Job: sessions.JobCompact, Duration: 3},
		{Type: sessions.UpdateToolFinished, Tool: "bash", Text: "hi\n[exit status 0]"},
		{Type: sessions.UpdateToolFinished, Tool: "bash", Text: "no\n[exit status 1]"},
		{Type: sessions.UpdateToolFinished, Tool: "str_replace_based_edit_tool", Text: "no such file", IsError: true},
		{Type: sessions.UpdateToolFinished, Tool: "bash", Text: "sleeping", Unknown: true, Stopped: true},
	} {
		s.Publish(u)
	}
	s.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the consumer did not end when the service closed")
	}
	m.Observe("m", model.Attempt{Status: 529, Retry: true, Headers: 30 * time.Millisecond})
	m.Observe("m", model.Attempt{Status: 529, Retry: true, Headers: 20 * time.Millisecond})
	m.Observe("m", model.Attempt{Status: 200, Headers: 10 * time.Millisecond, FirstChunk: 900 * time.Millisecond,
		Usage: model.Usage{Input: 100, Output: 5, CacheRead: 60}})
	m.Observe("m", model.Attempt{Status: 0})

	fams := scrape(t, m)
	for _, tt := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"myco_turns_total", map[string]string{"outcome": "done"}, 1},
		{"myco_turns_total", map[string]string{"outcome": "auth_failed"}, 1},
		{"myco_turns_total", map[string]string{"outcome": "stopped"}, 1},
		{"myco_turns_total", map[string]string{"outcome": "overloaded"}, 0}, // there from the start
		{"myco_turn_seconds", nil, 3},
		{"myco_tool_calls_total", map[string]string{"tool": "bash", "outcome": "ok"}, 1},
		{"myco_tool_calls_total", map[string]string{"tool": "bash", "outcome": "error"}, 1},
		{"myco_tool_calls_total", map[string]string{"tool": "bash", "outcome": "unknown"}, 1},
		{"myco_tool_calls_total", map[string]string{"tool": "str_replace_based_edit_tool", "outcome": "error"}, 1},
		{"myco_model_requests_total", map[string]string{"model": "m", "status": "529"}, 2},
		{"myco_model_requests_total", map[string]string{"model": "m", "status": "200"}, 1},
		{"myco_model_requests_total", map[string]string{"model": "m", "status": "0"}, 1},
		{"myco_model_retries_total", map[string]string{"model": "m"}, 2},
		{"myco_model_request_seconds", map[string]string{"model": "m"}, 3},
		{"myco_model_first_token_seconds", map[string]string{"model": "m"}, 1},
		{"myco_model_tokens_total", map[string]string{"model": "m", "kind": "input"}, 100},
		{"myco_model_tokens_total", map[string]string{"model": "m", "kind": "output"}, 5},
		{"myco_model_tokens_total", map[string]string{"model": "m", "kind": "cache_read"}, 60},
		{"myco_event_streams", map[string]string{"kind": "page"}, 0},
		{"myco_sessions_open", nil, 0},
		{"myco_metrics_missed_total", nil, 0},
	} {
		if got, ok := value(fams, tt.family, tt.labels); !ok || got != tt.want {
			t.Errorf("%s%v = %v (there: %v), want %v", tt.family, tt.labels, got, ok, tt.want)
		}
	}
	if h := fams["myco_turn_seconds"].GetMetric()[0].GetHistogram(); h.GetSampleSum() != 42.5 {
		t.Errorf("myco_turn_seconds sum = %v, want 42.5 (the turns', not the compaction's)", h.GetSampleSum())
	}
	if _, ok := value(fams, "myco_model_tokens_total", map[string]string{"model": "m", "kind": "cache_write"}); ok {
		t.Error("a kind no answer used has a series")
	}
}

// TestMetricsToolNames: tool names come from the model; past maxToolLabels of them, the
// calls of new names count as other.
func TestMetricsToolNames(t *testing.T) {
	m := NewMetrics("work")
	for i := range maxToolLabels + 20 {
		m.count(sessions.Update{Type: sessions.UpdateToolFinished, Tool: "tool" + strconv.Itoa(i), IsError: true})
	}
	m.count(sessions.Update{Type: sessions.UpdateToolFinished, Tool: "tool0", IsError: true})
	fams := scrape(t, m)
	if n := len(fams["myco_tool_calls_total"].GetMetric()); n != maxToolLabels+1 {
		t.Errorf("%d series, want %d", n, maxToolLabels+1)
	}
	if v, _ := value(fams, "myco_tool_calls_total", map[string]string{"tool": "other", "outcome": "error"}); v != 20 {
		t.Errorf("other = %v, want 20", v)
	}
	if v, _ := value(fams, "myco_tool_calls_total", map[string]string{"tool": "tool0", "outcome": "error"}); v != 2 {
		t.Errorf("tool0 = %v, want 2", v)
	}
}
