package metrics

import (
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ContentType is the media type of the text format that [Registry.WriteTo] writes.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Label is a label's name and value.
type Label struct{ Name, Value string }

// Options configure a [Registry].
type Options struct {
	// Labels are added to every sample the registry writes, before the family's own: a
	// profile worker's profile, so that the server can gather its workers' metrics into
	// one exposition.
	Labels []Label
}

// Registry is a set of metric families, written in the order they were registered. Make
// one with [NewRegistry]; register each family once, when the program starts: the
// registering methods panic on a name that is invalid or taken, or on invalid labels or
// buckets, as http.ServeMux.Handle panics on a pattern it cannot take. It is safe for
// concurrent use.
type Registry struct {
	constant []byte   // the constant labels, rendered: `a="x",b="y"`
	names    []string // and their names

	mu       sync.Mutex // guards families
	families []*family
}

// family is one metric family: its name, help, type and how it writes its samples.
type family struct {
	name, help, typ string
	labels          []string
	write           func(e *encoder)
}

// NewRegistry returns an empty registry.
func NewRegistry(o Options) *Registry {
	r := &Registry{}
	for i, l := range o.Labels {
		checkLabel(l.Name, r.names)
		r.names = append(r.names, l.Name)
		if i > 0 {
			r.constant = append(r.constant, ',')
		}
		r.constant = appendLabel(r.constant, l.Name, l.Value)
	}
	return r
}

func (r *Registry) add(f *family) {
	if !validName(f.name) {
		panic("metrics: invalid metric name " + strconv.Quote(f.name))
	}
	if f.typ == "counter" && !strings.HasSuffix(f.name, "_total") {
		panic("metrics: the counter " + f.name + " must be named *_total")
	}
	if len(f.labels) > maxLabels {
		panic("metrics: " + f.name + " has more than " + strconv.Itoa(maxLabels) + " labels")
	}
	seen := slices.Clone(r.names)
	for _, l := range f.labels {
		checkLabel(l, seen)
		seen = append(seen, l)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.families {
		if g.name == f.name {
			panic("metrics: " + f.name + " is registered twice")
		}
	}
	r.families = append(r.families, f)
}

// checkLabel panics on a label name that is invalid, reserved ("le", "__*") or one of
// taken.
func checkLabel(name string, taken []string) {
	if !validLabel(name) || name == "le" || strings.HasPrefix(name, "__") {
		panic("metrics: invalid label name " + strconv.Quote(name))
	}
	if slices.Contains(taken, name) {
		panic("metrics: label " + name + " given twice")
	}
}

// Counter registers a counter without labels and returns it. Its name ends in _total.
func (r *Registry) Counter(name, help string) *Counter {
	c := &Counter{}
	r.add(&family{name: name, help: help, typ: "counter", write: func(e *encoder) {
		e.sample(name, "", nil, nil, "", e.uint(c.Value()))
	}})
	return c
}

// CounterVec registers a family of counters with labels and returns it. Its name ends in
// _total.
func (r *Registry) CounterVec(name, help string, labels ...string) *CounterVec {
	v := newVec(name, labels, func() *Counter { return &Counter{} })
	r.add(&family{name: name, help: help, typ: "counter", labels: labels, write: func(e *encoder) {
		v.each(func(values []string, c *Counter) { e.sample(name, "", labels, values, "", e.uint(c.Value())) })
	}})
	return &CounterVec{v}
}

// Gauge registers a gauge without labels and returns it.
func (r *Registry) Gauge(name, help string) *Gauge {
	g := &Gauge{}
	r.add(&family{name: name, help: help, typ: "gauge", write: func(e *encoder) {
		e.sample(name, "", nil, nil, "", e.int(g.Value()))
	}})
	return g
}

// GaugeVec registers a family of gauges with labels and returns it.
func (r *Registry) GaugeVec(name, help string, labels ...string) *GaugeVec {
	v := newVec(name, labels, func() *Gauge { return &Gauge{} })
	r.add(&family{name: name, help: help, typ: "gauge", labels: labels, write: func(e *encoder) {
		v.each(func(values []string, g *Gauge) { e.sample(name, "", labels, values, "", e.int(g.Value())) })
	}})
	return &GaugeVec{v}
}

// Histogram registers a histogram without labels and returns it. buckets are the upper
// bounds, ascending and finite; the +Inf bucket is added.
func (r *Registry) Histogram(name, help string, buckets []float64) *Histogram {
	bounds := checkBuckets(name, buckets)
	h := newHistogram(bounds)
	r.add(&family{name: name, help: help, typ: "histogram", write: func(e *encoder) {
		e.histogram(name, nil, nil, h)
	}})
	return h
}

// HistogramVec registers a family of histograms with labels and the same buckets (see
// [Registry.Histogram]) and returns it.
func (r *Registry) HistogramVec(name, help string, buckets []float64, labels ...string) *HistogramVec {
	bounds := checkBuckets(name, buckets)
	v := newVec(name, labels, func() *Histogram { return newHistogram(bounds) })
	r.add(&family{name: name, help: help, typ: "histogram", labels: labels, write: func(e *encoder) {
		v.each(func(values []string, h *Histogram) { e.histogram(name, labels, values, h) })
	}})
	return &HistogramVec{v}
}

// Emit gives one sample of a family read when it is written: its value and its label
// values, one per label in the family's order.
type Emit func(value float64, values ...string)

// CounterFunc registers a family of counters whose samples collect gives each time the
// registry is written, by calling emit once per sample: counts kept elsewhere (a worker's
// crashes). Its name ends in _total. collect must be safe for concurrent use.
func (r *Registry) CounterFunc(name, help string, labels []string, collect func(emit Emit)) {
	r.add(&family{name: name, help: help, typ: "counter", labels: labels, write: func(e *encoder) {
		collect(func(v float64, values ...string) { e.sample(name, "", labels, values, "", e.float(v)) })
	}})
}

// GaugeFunc registers a family of gauges whose samples collect gives each time the
// registry is written (see [Registry.CounterFunc]): values read at scrape time, such as
// what is open now. collect must be safe for concurrent use.
func (r *Registry) GaugeFunc(name, help string, labels []string, collect func(emit Emit)) {
	r.add(&family{name: name, help: help, typ: "gauge", labels: labels, write: func(e *encoder) {
		collect(func(v float64, values ...string) { e.sample(name, "", labels, values, "", e.float(v)) })
	}})
}

// checkBuckets returns a copy of buckets, panicking unless they are ascending and finite.
func checkBuckets(name string, buckets []float64) []float64 {
	if len(buckets) == 0 {
		panic("metrics: the histogram " + name + " has no buckets")
	}
	for i, b := range buckets {
		if math.IsInf(b, 0) || math.IsNaN(b) || i > 0 && b <= buckets[i-1] {
			panic("metrics: the buckets of " + name + " must be finite and ascending")
		}
	}
	return slices.Clone(buckets)
}

// AppendText appends the registry's exposition, in the text format, to b.
func (r *Registry) AppendText(b []byte) []byte {
	r.mu.Lock()
	families := slices.Clone(r.families)
	r.mu.Unlock()
	e := &encoder{b: b, constant: r.constant}
	for _, f := range families {
		e.header(f)
		f.write(e)
	}
	return e.b
}

// WriteTo writes the registry's exposition, in the text format, to w.
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(r.AppendText(nil))
	return int64(n), err
}

// ServeHTTP answers the registry's exposition, with its [ContentType].
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", ContentType)
	r.WriteTo(w)
}
