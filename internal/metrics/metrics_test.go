package metrics

import (
	"bytes"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parse reads an exposition with the Prometheus text parser, failing t on any error.
func parse(t *testing.T, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, b)
	}
	return fams
}

// labels returns m's labels as a map.
func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// find returns the metric of family name whose labels include want, failing t when there
// is none.
func find(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no family %s", name)
	}
next:
	for _, m := range f.GetMetric() {
		got := labels(m)
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("%s has no metric with labels %v", name, want)
	return nil
}

// TestText writes every kind of family, with awkward help and label values, and reads it
// back with the Prometheus parser.
func TestText(t *testing.T) {
	r := NewRegistry(Options{Labels: []Label{{"profile", `we"ird\`}}})
	turns := r.CounterVec("myco_turns_total", "Turns by outcome.\nA second line, a \\ backslash.", "outcome")
	turns.With("done").Add(3)
	turns.With("auth_failed").Inc()
	odd := "a \"quoted\" \\ back\nslash and \xff not UTF-8"
	turns.With(odd).Inc()
	plain := r.Counter("myco_plain_total", "A counter without labels.")
	plain.Add(7)
	g := r.Gauge("myco_open", "A gauge.")
	g.Add(5)
	g.Add(-2)
	streams := r.GaugeVec("myco_streams", "Streams by kind.", "kind")
	streams.With("page").Add(2)
	lat := r.HistogramVec("myco_latency_seconds", "Latency.", []float64{0.1, 0.5, 1}, "model")
	for _, v := range []float64{0.05, 0.1, 0.3, 0.7, 2} {
		lat.With("m").Observe(v)
	}
	lat.With("n").ObserveDuration(250 * time.Millisecond)
	r.CounterFunc("myco_crashes_total", "Crashes.", []string{"worker"}, func(emit Emit) {
		emit(2, "a")
		emit(0, "b")
	})
	r.GaugeFunc("myco_sessions_open", "Open sessions.", nil, func(emit Emit) { emit(4) })
	r.GaugeFunc("myco_ratio", "A fraction.", nil, func(emit Emit) { emit(0.25) })
	r.HistogramVec("myco_unused_seconds", "No observations yet.", []float64{1}, "model")

	var b bytes.Buffer
	if _, err := r.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	fams := parse(t, b.Bytes())

	if h := fams["myco_turns_total"].GetHelp(); h != "Turns by outcome.\nA second line, a \\ backslash." {
		t.Errorf("help = %q", h)
	}
	for _, tt := range []struct {
		outcome string
		want    float64
	}{{"done", 3}, {"auth_failed", 1}, {strings.ToValidUTF8(odd, "\uFFFD"), 1}} {
		m := find(t, fams, "myco_turns_total", map[string]string{"outcome": tt.outcome, "profile": `we"ird\`})
		if v := m.GetCounter().GetValue(); v != tt.want {
			t.Errorf("myco_turns_total{outcome=%q} = %v, want %v", tt.outcome, v, tt.want)
		}
	}
	if v := find(t, fams, "myco_plain_total", nil).GetCounter().GetValue(); v != 7 {
		t.Errorf("myco_plain_total = %v, want 7", v)
	}
	if v := find(t, fams, "myco_open", nil).GetGauge().GetValue(); v != 3 {
		t.Errorf("myco_open = %v, want 3", v)
	}
	if v := find(t, fams, "myco_streams", map[string]string{"kind": "page"}).GetGauge().GetValue(); v != 2 {
		t.Errorf("myco_streams{kind=page} = %v, want 2", v)
	}
	if v := find(t, fams, "myco_crashes_total", map[string]string{"worker": "a"}).GetCounter().GetValue(); v != 2 {
		t.Errorf("myco_crashes_total{worker=a} = %v, want 2", v)
	}
	if v := find(t, fams, "myco_sessions_open", nil).GetGauge().GetValue(); v != 4 {
		t.Errorf("myco_sessions_open = %v, want 4", v)
	}
	if v := find(t, fams, "myco_ratio", nil).GetGauge().GetValue(); v != 0.25 {
		t.Errorf("myco_ratio = %v, want 0.25", v)
	}
	h := find(t, fams, "myco_latency_seconds", map[string]string{"model": "m"}).GetHistogram()
	if h.GetSampleCount() != 5 || math.Abs(h.GetSampleSum()-3.15) > 1e-9 {
		t.Errorf("histogram count, sum = %d, %v; want 5, 3.15", h.GetSampleCount(), h.GetSampleSum())
	}
	want := map[float64]uint64{0.1: 2, 0.5: 3, 1: 4}
	for _, bk := range h.GetBucket() {
		if w, ok := want[bk.GetUpperBound()]; ok && bk.GetCumulativeCount() != w {
			t.Errorf("bucket le=%v = %d, want %d", bk.GetUpperBound(), bk.GetCumulativeCount(), w)
		}
		delete(want, bk.GetUpperBound())
	}
	if len(want) != 0 {
		t.Errorf("buckets missing: %v", want)
	}
	if h := find(t, fams, "myco_latency_seconds", map[string]string{"model": "n"}).GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != 0.25 {
		t.Errorf("a duration: count %d, sum %v; want 1, 0.25", h.GetSampleCount(), h.GetSampleSum())
	}
	// Exactly as written, for the line format itself.
	for _, line := range []string{
		`# TYPE myco_turns_total counter`,
		`myco_turns_total{profile="we\"ird\\",outcome="done"} 3`,
		`myco_latency_seconds_bucket{profile="we\"ird\\",model="m",le="0.5"} 3`,
		`myco_latency_seconds_bucket{profile="we\"ird\\",model="m",le="+Inf"} 5`,
		`myco_latency_seconds_count{profile="we\"ird\\",model="m"} 5`,
		`# HELP myco_unused_seconds No observations yet.`,
	} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("the exposition has no line %s:\n%s", line, b.String())
		}
	}
}

// TestNoLabels writes a registry without constant labels: a family without labels has
// no braces.
func TestNoLabels(t *testing.T) {
	r := NewRegistry(Options{})
	r.Counter("a_total", "A.").Inc()
	r.Histogram("b_seconds", "B.", []float64{1}).Observe(3)
	got := string(r.AppendText(nil))
	want := "# HELP a_total A.\n# TYPE a_total counter\na_total 1\n" +
		"# HELP b_seconds B.\n# TYPE b_seconds histogram\nb_seconds_bucket{le=\"1\"} 0\nb_seconds_bucket{le=\"+Inf\"} 1\nb_seconds_sum 3\nb_seconds_count 1\n"
	if got != want {
		t.Errorf("AppendText =\n%s\nwant\n%s", got, want)
	}
	parse(t, []byte(got))
}

// TestRegisterRefuses: names, labels and buckets the format does not take are refused
// when they are registered, not when they are scraped.
func TestRegisterRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		f    func(r *Registry)
	}{
		{"counter without _total", func(r *Registry) { r.Counter("myco_turns", "") }},
		{"bad name", func(r *Registry) { r.Gauge("myco-open", "") }},
		{"name starting with a digit", func(r *Registry) { r.Gauge("1x", "") }},
		{"taken name", func(r *Registry) { r.Gauge("x", ""); r.GaugeVec("x", "", "a") }},
		{"bad label", func(r *Registry) { r.GaugeVec("x", "", "a-b") }},
		{"reserved le", func(r *Registry) { r.GaugeVec("x", "", "le") }},
		{"reserved __", func(r *Registry) { r.GaugeVec("x", "", "__name") }},
		{"constant label again", func(r *Registry) { r.GaugeVec("x", "", "profile") }},
		{"too many labels", func(r *Registry) { r.GaugeVec("x", "", "a", "b", "c", "d", "e") }},
		{"no buckets", func(r *Registry) { r.Histogram("x", "", nil) }},
		{"unsorted buckets", func(r *Registry) { r.Histogram("x", "", []float64{1, 0.5}) }},
		{"infinite bucket", func(r *Registry) { r.Histogram("x", "", []float64{1, math.Inf(1)}) }},
		{"wrong number of values", func(r *Registry) { r.CounterVec("x_total", "", "a").With("1", "2") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tt.name)
				}
			}()
			tt.f(NewRegistry(Options{Labels: []Label{{"profile", "p"}}}))
		})
	}
}

// TestConcurrent records from many goroutines while others write the registry (run it
// with -race): no count is lost, and every exposition parses.
func TestConcurrent(t *testing.T) {
	r := NewRegistry(Options{Labels: []Label{{"profile", "p"}}})
	calls := r.CounterVec("calls_total", "Calls.", "tool", "outcome")
	open := r.GaugeVec("open", "Open.", "kind")
	lat := r.HistogramVec("lat_seconds", "Latency.", []float64{0.5, 1}, "model")
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			b := r.AppendText(nil)
			p := expfmt.NewTextParser(model.LegacyValidation)
			if _, err := p.TextToMetricFamilies(bytes.NewReader(b)); err != nil {
				t.Errorf("parse while recording: %v\n%s", err, b) // not Fatal: this is not the test's goroutine
				return
			}
		}
	})
	var rec sync.WaitGroup
	for w := range workers {
		rec.Go(func() {
			tool := []string{"bash", "view_image"}[w%2]
			for i := range each {
				calls.With(tool, "ok").Inc()
				g := open.With("page")
				g.Add(1)
				lat.With("m").Observe(float64(i%3) * 0.5)
				g.Add(-1)
			}
		})
	}
	rec.Wait()
	close(done)
	wg.Wait()
	fams := parse(t, r.AppendText(nil))
	for _, tool := range []string{"bash", "view_image"} {
		if v := find(t, fams, "calls_total", map[string]string{"tool": tool}).GetCounter().GetValue(); v != workers/2*each {
			t.Errorf("calls_total{tool=%s} = %v, want %d", tool, v, workers/2*each)
		}
	}
	if v := find(t, fams, "open", nil).GetGauge().GetValue(); v != 0 {
		t.Errorf("open = %v, want 0", v)
	}
	h := find(t, fams, "lat_seconds", nil).GetHistogram()
	if h.GetSampleCount() != workers*each {
		t.Errorf("lat_seconds count = %d, want %d", h.GetSampleCount(), workers*each)
	}
	// each worker observes 0, 0.5 and 1 in turn: 1333, 1334 and 1333 of 2000 (0, 0.5, 1)
	wantSum := float64(workers) * (0.5*667 + 1*666)
	if math.Abs(h.GetSampleSum()-wantSum) > 1e-6 {
		t.Errorf("lat_seconds sum = %v, want %v", h.GetSampleSum(), wantSum)
	}
}

// TestRecordingDoesNotAllocate: the hot path is an atomic add (and a map lookup under a
// read lock for a labelled family), with no allocation.
func TestRecordingDoesNotAllocate(t *testing.T) {
	r := NewRegistry(Options{Labels: []Label{{"profile", "p"}}})
	c := r.Counter("c_total", "")
	cv := r.CounterVec("cv_total", "", "tool", "outcome")
	gv := r.GaugeVec("gv", "", "kind")
	hv := r.HistogramVec("hv_seconds", "", []float64{0.1, 1, 10}, "model")
	cv.With("bash", "ok")
	gv.With("page")
	hv.With("m")
	tool, outcome := strings.Repeat("bash", 1), "ok" // not constants
	for _, tt := range []struct {
		name string
		f    func()
	}{
		{"Counter.Inc", func() { c.Inc() }},
		{"CounterVec.With.Inc", func() { cv.With(tool, outcome).Inc() }},
		{"GaugeVec.With.Add", func() { gv.With("page").Add(1) }},
		{"HistogramVec.With.Observe", func() { hv.With("m").Observe(0.5) }},
		{"Histogram.ObserveDuration", func() { hv.With("m").ObserveDuration(3 * time.Second) }},
	} {
		if n := testing.AllocsPerRun(100, tt.f); n != 0 {
			t.Errorf("%s allocates %v times, want 0", tt.name, n)
		}
	}
}

func BenchmarkCounterVec(b *testing.B) {
	r := NewRegistry(Options{})
	cv := r.CounterVec("cv_total", "", "tool", "outcome")
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			cv.With("bash", "ok").Inc()
		}
	})
}
