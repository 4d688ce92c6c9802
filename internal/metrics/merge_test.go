package metrics

import (
	"bytes"
	"strings"
	"testing"
)

// worker is a registry as a profile worker has it.
func worker(profile string, turns uint64, observed float64) []byte {
	r := NewRegistry(Options{Labels: []Label{{"profile", profile}}})
	r.CounterVec("myco_turns_total", "Turns.", "outcome").With("done").Add(turns)
	r.HistogramVec("myco_model_request_seconds", "Latency.", []float64{0.5, 1}, "model").With("m").Observe(observed)
	r.GaugeVec("myco_event_streams", "Streams.", "kind") // no samples yet
	return r.AppendText(nil)
}

// TestMerge joins two workers' expositions and the supervisor's own into one that the
// Prometheus parser reads (it refuses a family given twice): each family once, with every
// worker's samples.
func TestMerge(t *testing.T) {
	sup := NewRegistry(Options{})
	sup.GaugeFunc("myco_worker_running", "Running.", []string{"profile"}, func(emit Emit) {
		emit(1, "a")
		emit(1, "b")
	})
	note := AppendComment(nil, "profile c: left out\nits worker did not answer")
	var b bytes.Buffer
	if err := Merge(&b, sup.AppendText(nil), worker("a", 2, 0.3), note, worker("b", 5, 0.8)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	fams := parse(t, b.Bytes())
	for _, tt := range []struct {
		profile string
		turns   float64
	}{{"a", 2}, {"b", 5}} {
		if v := find(t, fams, "myco_turns_total", map[string]string{"profile": tt.profile}).GetCounter().GetValue(); v != tt.turns {
			t.Errorf("myco_turns_total{profile=%s} = %v, want %v", tt.profile, v, tt.turns)
		}
		if h := find(t, fams, "myco_model_request_seconds", map[string]string{"profile": tt.profile}).GetHistogram(); h.GetSampleCount() != 1 {
			t.Errorf("histogram of %s: count %d, want 1", tt.profile, h.GetSampleCount())
		}
	}
	if n := len(fams["myco_worker_running"].GetMetric()); n != 2 {
		t.Errorf("myco_worker_running has %d samples, want 2", n)
	}
	if strings.Count(out, "# HELP myco_turns_total") != 1 || strings.Count(out, "# TYPE myco_event_streams") != 1 {
		t.Errorf("a family's header is not there once:\n%s", out)
	}
	if !strings.HasPrefix(out, "# profile c: left out its worker did not answer\n") {
		t.Errorf("the comment does not come first, on one line:\n%s", out)
	}
}

// TestMergeTypeConflict: a later part whose family has another type keeps the first's
// samples only, and says so in a comment.
func TestMergeTypeConflict(t *testing.T) {
	a := NewRegistry(Options{Labels: []Label{{"profile", "a"}}})
	a.Gauge("x", "X.").Set(1)
	b := NewRegistry(Options{Labels: []Label{{"profile", "b"}}})
	b.Counter("x_total", "X.").Inc()
	c := NewRegistry(Options{Labels: []Label{{"profile", "c"}}})
	c.GaugeFunc("x", "X.", nil, func(emit Emit) { emit(2) }) // a gauge too: kept
	odd := []byte("# HELP x X.\n# TYPE x counter\nx{profile=\"d\"} 9\n")
	var out bytes.Buffer
	Merge(&out, a.AppendText(nil), b.AppendText(nil), odd, c.AppendText(nil))
	fams := parse(t, out.Bytes())
	if n := len(fams["x"].GetMetric()); n != 2 {
		t.Errorf("x has %d samples, want a's and c's:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "# samples of x of another type were left out: # TYPE x counter\n") {
		t.Errorf("no comment on the conflict:\n%s", out.String())
	}
}
