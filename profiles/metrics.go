package profiles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"myco.dev/internal/metrics"
)

// maxWorkerMetrics bounds the exposition read from one worker.
const maxWorkerMetrics = 8 << 20

// newMetrics registers the supervisor's own families: its workers' states and crashes, and
// the browsers' merged streams.
func (s *supervisor) newMetrics() *metrics.Registry {
	r := metrics.NewRegistry(metrics.Options{})
	r.GaugeFunc("myco_worker_running", "Whether the profile's worker runs (1) or not (0): a worker starts on its profile's first request.",
		[]string{"profile"}, func(emit metrics.Emit) {
			for _, st := range s.Workers.States() {
				emit(bool01(st.Running), st.Profile)
			}
		})
	r.CounterFunc("myco_worker_crashes_total", "Times the profile's worker crashed since the server started (it starts again on the next request).",
		[]string{"profile"}, func(emit metrics.Emit) {
			for _, st := range s.Workers.States() {
				emit(float64(st.TotalCrashes), st.Profile)
			}
		})
	r.GaugeFunc("myco_browser_streams", "The server's merged event streams open: one per browser, carrying its pages' session streams.",
		nil, func(emit metrics.Emit) { emit(float64(s.streams.count())) })
	return r
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// serveMetrics answers GET /metrics: the supervisor's families and those of every running
// worker (each sample with its profile label), gathered now, each family once. A worker
// that does not answer within MetricsTimeout, or fails, is left out: a comment says why,
// and myco_worker_metrics_gathered is 0 for it. No worker is started for it.
func (s *supervisor) serveMetrics(w http.ResponseWriter, r *http.Request) {
	type gathered struct {
		profile string
		body    []byte
		err     error
	}
	var running []gathered
	for _, st := range s.Workers.States() {
		if st.Running {
			running = append(running, gathered{profile: st.Profile})
		}
	}
	var wg sync.WaitGroup
	for i := range running {
		wg.Go(func() { running[i].body, running[i].err = s.workerMetrics(r.Context(), running[i].profile, r.Host) })
	}
	wg.Wait()
	if r.Context().Err() != nil {
		return // the scraper left
	}
	scrape := metrics.NewRegistry(metrics.Options{})
	ok := scrape.GaugeVec("myco_worker_metrics_gathered",
		"Whether the running profile worker's metrics are in this answer (1), or were left out (0): it did not answer in time, or failed; a comment says why.",
		"profile")
	parts := [][]byte{s.metrics.AppendText(nil), nil}
	var notes []byte
	for _, g := range running {
		if g.err != nil {
			ok.With(g.profile).Set(0)
			notes = metrics.AppendComment(notes, "the metrics of profile "+g.profile+" are left out: "+g.err.Error())
			s.Log.Warn("profile worker's metrics left out", "profile", g.profile, "err", g.err)
			continue
		}
		ok.With(g.profile).Set(1)
		parts = append(parts, g.body)
	}
	parts[1] = append(notes, scrape.AppendText(nil)...)
	var b bytes.Buffer
	metrics.Merge(&b, parts...)
	w.Header().Set("Content-Type", metrics.ContentType)
	w.Write(b.Bytes())
}

// workerMetrics reads profile name's worker's exposition, within MetricsTimeout, under
// host (the scrape's, which the worker checks too). In token mode the request carries the
// token, as any client's must.
func (s *supervisor) workerMetrics(ctx context.Context, name, host string) ([]byte, error) {
	snd, gen, ok := s.Workers.Running(name)
	if !ok {
		return nil, errors.New("its worker stopped")
	}
	p := s.proxyOf(name, snd, gen)
	ctx, cancel := context.WithTimeout(ctx, s.MetricsTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://profile-"+name+"/profiles/"+name+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Host = host
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	resp, err := p.transport.RoundTrip(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("its worker did not answer within %v", s.MetricsTimeout)
		}
		return nil, fmt.Errorf("its worker did not answer: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("its worker answered %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxWorkerMetrics+1))
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("its worker did not answer within %v", s.MetricsTimeout)
	case err != nil:
		return nil, fmt.Errorf("read its worker's answer: %w", err)
	case len(b) > maxWorkerMetrics:
		return nil, fmt.Errorf("its worker's answer is over %d bytes", maxWorkerMetrics)
	}
	return b, nil
}
