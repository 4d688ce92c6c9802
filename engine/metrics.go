package engine

import (
	"context"
	"strconv"
	"sync"

	"myco.dev/agent/model"
	"myco.dev/internal/metrics"
	"myco.dev/sessions"
)

// maxToolLabels bounds the tool label's values: a tool name comes from the model, which
// may call tools that do not exist; the calls of names past this many count as "other".
const maxToolLabels = 100

// Metrics are a profile worker's metrics, for its whole life: the engines that its
// config's changes build one after another count into the same families. What the session
// service's updates tell is counted by a consumer of them (turns by outcome, tool calls by
// tool and outcome), what the model clients' attempts tell by their observer (requests by
// status, retries, tokens, latencies), and what is open is read at scrape time: the
// session service stays free of metrics code. Safe for concurrent use.
type Metrics struct {
	// Registry is the exposition, which the profile's /metrics serves; every sample has
	// the profile's label.
	Registry *metrics.Registry
	// Streams counts the event streams open, by kind: page (a session page's, or the
	// supervisor's relay of one), api (the JSON API's). The handlers count theirs.
	Streams *metrics.GaugeVec

	turns     *metrics.CounterVec
	turnTime  *metrics.Histogram
	tools     *metrics.CounterVec
	requests  *metrics.CounterVec
	retries   *metrics.CounterVec
	tokens    *metrics.CounterVec
	headers   *metrics.HistogramVec
	firstByte *metrics.HistogramVec
	missed    *metrics.Counter

	mu        sync.Mutex                     // guards the fields below
	services  map[*sessions.Manager]struct{} // the services followed now
	toolNames map[string]bool                // the tool label's values so far
}

// NewMetrics returns the metrics of profile, every family registered.
func NewMetrics(profile string) *Metrics {
	// Latency buckets, in seconds: a gateway's headers come within a second or a few, a
	// first token once the prompt is read (later for a large one), a turn takes seconds
	// to an hour.
	var (
		requestBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
		firstBuckets   = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}
		turnBuckets    = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600}
	)
	r := metrics.NewRegistry(metrics.Options{Labels: []metrics.Label{{Name: "profile", Value: profile}}})
	m := &Metrics{Registry: r, services: map[*sessions.Manager]struct{}{}, toolNames: map[string]bool{}}
	m.turns = r.CounterVec("myco_turns_total",
		"Turns ended, by outcome: done, or the code of the failure or stop (stopped, shutdown, auth_failed, overloaded, stream_broken, ...: the codes of last_error).",
		"outcome")
	m.turnTime = r.Histogram("myco_turn_seconds", "How long turns took, from their start to their end, whatever the outcome.", turnBuckets)
	m.tools = r.CounterVec("myco_tool_calls_total", "Tool calls ended, by tool and outcome: ok, error (a bash command's exit status other than 0 too) or unknown (stopped while it ran, or its outcome never seen).",
		"tool", "outcome")
	m.requests = r.CounterVec("myco_model_requests_total",
		"Requests sent to the models, each attempt counted, by model key and HTTP status; status 0 is an attempt without a response (no connection, no headers in time, or stopped first).",
		"model", "status")
	m.retries = r.CounterVec("myco_model_retries_total", "Attempts the model client retried after (a retryable status or no response, before anything streamed).", "model")
	m.tokens = r.CounterVec("myco_model_tokens_total",
		"Tokens of the models' answers, as their usage tells, by model key and kind: input (every prompt token, cache_read and cache_write included), output, cache_read, cache_write. Compactions' requests count too.",
		"model", "kind")
	m.headers = r.HistogramVec("myco_model_request_seconds", "Time from sending a request to its response's headers, by model key.", requestBuckets, "model")
	m.firstByte = r.HistogramVec("myco_model_first_token_seconds", "Time from sending a request to the first chunk of its answer (text, thinking or a tool call), by model key.", firstBuckets, "model")
	m.Streams = r.GaugeVec("myco_event_streams", "Event streams open, by kind: page (a session page's, relayed by the server's one stream per browser) or api (the JSON API's /api/events).", "kind")
	r.GaugeFunc("myco_sessions_open", "Sessions open in the worker: loaded with their runtime, until they idle out.", nil, func(emit metrics.Emit) {
		open, _ := m.occupancy()
		emit(float64(open))
	})
	r.GaugeFunc("myco_sessions_busy", "Sessions running a job (a turn or a compaction) now.", nil, func(emit metrics.Emit) {
		_, busy := m.occupancy()
		emit(float64(busy))
	})
	m.missed = r.Counter("myco_metrics_missed_total", "Times the metrics fell behind the session service's updates and missed some: the turn and tool counts are short by what they missed.")
	// The outcomes are a closed set: each is a series from the start, so that a rate of
	// one that has not happened yet reads 0, not nothing. Interrupted is not one: a turn
	// is interrupted by the end of the process that ran it (myco_worker_crashes_total).
	m.turns.With("done")
	for _, k := range sessions.Kinds {
		if k.Code != "interrupted" {
			m.turns.With(k.Code)
		}
	}
	m.Streams.With("page")
	m.Streams.With("api")
	return m
}

// occupancy sums the sessions open and busy of the services followed now.
func (m *Metrics) occupancy() (open, busy int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for s := range m.services {
		o, b := s.Occupancy()
		open, busy = open+o, busy+b
	}
	return open, busy
}

// Observe counts one attempt of model key's requests: a [sessions/catalog.Options]
// Observe.
func (m *Metrics) Observe(key string, a model.Attempt) {
	m.requests.With(key, strconv.Itoa(a.Status)).Inc()
	if a.Retry {
		m.retries.With(key).Inc()
	}
	if a.Headers > 0 {
		m.headers.With(key).ObserveDuration(a.Headers)
	}
	if a.FirstChunk > 0 {
		m.firstByte.With(key).ObserveDuration(a.FirstChunk)
	}
	for _, t := range []struct {
		kind string
		n    int
	}{{"input", a.Usage.Input}, {"output", a.Usage.Output}, {"cache_read", a.Usage.CacheRead}, {"cache_write", a.Usage.CacheWrite}} {
		if t.n > 0 {
			m.tokens.With(key, t.kind).Add(uint64(t.n))
		}
	}
}

// follow counts the updates of s from sub, a subscription to all of them, until s shuts
// down or ctx ends; s's sessions count as open meanwhile.
func (m *Metrics) follow(ctx context.Context, s *sessions.Manager, sub *sessions.Subscription) {
	defer sub.Close()
	m.mu.Lock()
	m.services[s] = struct{}{}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.services, s)
		m.mu.Unlock()
	}()
	for {
		ups, err := sub.Next(ctx)
		if err != nil {
			return // the service closed (ErrShutdown, once every update was read) or ctx ended
		}
		for _, u := range ups {
			m.count(u)
		}
	}
}

// count counts what update u tells.
func (m *Metrics) count(u sessions.Update) {
	switch u.Type {
	case sessions.UpdateDone, sessions.UpdateError, sessions.UpdateCancelled:
		if u.Job != sessions.JobTurn {
			return
		}
		outcome := "done"
		if u.Type != sessions.UpdateDone {
			outcome = u.Code
			if outcome == "" {
				outcome = "failed"
			}
		}
		m.turns.With(outcome).Inc()
		m.turnTime.Observe(u.Duration)
	case sessions.UpdateToolFinished:
		o := sessions.ToolOutcome(u.Tool, model.ToolResult{Text: u.Text, IsError: u.IsError, Unknown: u.Unknown, Stopped: u.Stopped})
		m.tools.With(m.toolLabel(u.Tool), o.Status).Inc()
	case sessions.UpdateReset:
		m.missed.Inc()
	}
}

// toolLabel is tool's value of the tool label: its name, or "other" past maxToolLabels
// names.
func (m *Metrics) toolLabel(tool string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.toolNames[tool] {
		if len(m.toolNames) >= maxToolLabels {
			return "other"
		}
		m.toolNames[tool] = true
	}
	return tool
}
