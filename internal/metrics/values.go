package metrics

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Counter is a count that only goes up. The zero Counter is ready to use.
type Counter struct{ v atomic.Uint64 }

// Inc adds one.
func (c *Counter) Inc() { c.v.Add(1) }

// Add adds n.
func (c *Counter) Add(n uint64) { c.v.Add(n) }

// Value returns the count.
func (c *Counter) Value() uint64 { return c.v.Load() }

// Gauge is a whole number that goes up and down: things open now. The zero Gauge is ready
// to use.
type Gauge struct{ v atomic.Int64 }

// Add adds n, which may be negative.
func (g *Gauge) Add(n int64) { g.v.Add(n) }

// Set sets the value to n.
func (g *Gauge) Set(n int64) { g.v.Store(n) }

// Value returns the value.
func (g *Gauge) Value() int64 { return g.v.Load() }

// Histogram counts observations in buckets by their upper bounds, and keeps their sum.
// Make one with [Registry.Histogram] or [Registry.HistogramVec].
type Histogram struct {
	bounds []float64       // the buckets' upper bounds, ascending, +Inf excluded
	counts []atomic.Uint64 // per bucket (not cumulative); the last is +Inf's
	sum    atomic.Uint64   // the sum's float64 bits
}

func newHistogram(bounds []float64) *Histogram {
	return &Histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

// Observe counts v in the first bucket whose upper bound is at least v, and adds it to
// the sum.
func (h *Histogram) Observe(v float64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// ObserveDuration observes d in seconds.
func (h *Histogram) ObserveDuration(d time.Duration) { h.Observe(d.Seconds()) }

// Count returns how many observations were made.
func (h *Histogram) Count() uint64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// snapshot returns the cumulative counts of h's buckets, +Inf's last (which is the
// count: the count is read from the buckets, so the two always agree), and the sum.
func (h *Histogram) snapshot() ([]uint64, float64) {
	cum := make([]uint64, len(h.counts))
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
		cum[i] = n
	}
	return cum, math.Float64frombits(h.sum.Load())
}

// maxLabels bounds the labels of a family (its registry's constant labels apart): the
// label values of a child are a fixed-size array, a map key that costs no allocation.
const maxLabels = 4

type labelValues [maxLabels]string

// vec is the children of a labelled family, one per combination of label values.
type vec[T any] struct {
	name     string
	labels   []string
	newChild func() *T

	mu       sync.RWMutex // guards children
	children map[labelValues]*T
}

func newVec[T any](name string, labels []string, newChild func() *T) *vec[T] {
	return &vec[T]{name: name, labels: labels, newChild: newChild, children: map[labelValues]*T{}}
}

// with returns the child of values, made on first use. It panics when values are not one
// per label, as a wrong call is a bug in the caller.
func (v *vec[T]) with(values []string) *T {
	if len(values) != len(v.labels) {
		panic("metrics: " + v.name + " takes " + strconv.Itoa(len(v.labels)) + " label values, not " + strconv.Itoa(len(values)))
	}
	var k labelValues
	copy(k[:], values)
	v.mu.RLock()
	c := v.children[k]
	v.mu.RUnlock()
	if c != nil {
		return c
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if c = v.children[k]; c == nil {
		c = v.newChild()
		v.children[k] = c
	}
	return c
}

// each calls f with each child and its label values, in the order of the values.
func (v *vec[T]) each(f func(values []string, c *T)) {
	type entry struct {
		k labelValues
		c *T
	}
	v.mu.RLock()
	all := make([]entry, 0, len(v.children))
	for k, c := range v.children {
		all = append(all, entry{k, c})
	}
	v.mu.RUnlock()
	slices.SortFunc(all, func(a, b entry) int {
		for i := range a.k {
			if c := strings.Compare(a.k[i], b.k[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	for _, e := range all {
		f(e.k[:len(v.labels)], e.c)
	}
}

// CounterVec is a family of counters, one per combination of label values.
type CounterVec struct{ v *vec[Counter] }

// With returns the counter of values, one per label in the family's order. It panics for
// a wrong number of values.
func (c *CounterVec) With(values ...string) *Counter { return c.v.with(values) }

// GaugeVec is a family of gauges, one per combination of label values.
type GaugeVec struct{ v *vec[Gauge] }

// With returns the gauge of values, one per label in the family's order. It panics for a
// wrong number of values.
func (g *GaugeVec) With(values ...string) *Gauge { return g.v.with(values) }

// HistogramVec is a family of histograms with the same buckets, one per combination of
// label values.
type HistogramVec struct{ v *vec[Histogram] }

// With returns the histogram of values, one per label in the family's order. It panics
// for a wrong number of values.
func (h *HistogramVec) With(values ...string) *Histogram { return h.v.with(values) }
