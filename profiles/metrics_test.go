package profiles

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"myco.dev/internal/metrics"
	"myco.dev/internal/web"
	"myco.dev/static"
)

// metricsWorker is the fake workers' handler for TestSupervisorMetrics: each profile
// answers its metrics with its label, checked the way a worker checks a request (the
// Host, and in token mode the token); profile slow never answers.
func metricsWorker(port, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/profiles/"), "/metrics")
		switch {
		case !web.AllowedHost(r.Host, port):
			http.Error(w, "wrong host "+r.Host, http.StatusMisdirectedRequest)
		case token != "" && r.Header.Get("Authorization") != "Bearer "+token:
			http.Error(w, "no token", http.StatusForbidden)
		case name == "slow":
			<-r.Context().Done()
		case name == "broken":
			http.Error(w, "broken", http.StatusInternalServerError)
		default:
			reg := metrics.NewRegistry(metrics.Options{Labels: []metrics.Label{{Name: "profile", Value: name}}})
			reg.CounterVec("myco_turns_total", "Turns.", "outcome").With("done").Add(uint64(len(name)))
			reg.HistogramVec("myco_model_request_seconds", "Latency.", []float64{1}, "model").With("m").Observe(0.5)
			w.Header().Set("Content-Type", metrics.ContentType)
			reg.WriteTo(w)
		}
	})
}

// TestSupervisorMetrics: the server's /metrics holds its own families (workers running,
// their crashes, the browsers' streams) and every running worker's, gathered at once, each
// family once with a profile label; a worker that does not answer in time, or fails, is
// left out, said by a comment and a gauge, without holding the answer up; a worker that
// does not run is not started. In token mode the supervisor sends the token to its
// workers, and a scrape without it is refused like any request.
func TestSupervisorMetrics(t *testing.T) {
	for _, token := range []string{"", "the-token"} {
		t.Run("token="+token, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(nil)
			_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
			fw := newFakeWorkers(t, metricsWorker(port, token))
			for _, name := range []string{"default", "work", "slow", "broken"} {
				if _, _, err := fw.Worker(t.Context(), name); err != nil {
					t.Fatal(err)
				}
			}
			fw.states = []State{{Profile: "broken", Running: true}, {Profile: "default", Running: true, TotalCrashes: 2},
				{Profile: "idle"}, {Profile: "slow", Running: true}, {Profile: "work", Running: true}}
			srv.Config.Handler = NewSupervisor(SupervisorOptions{Workers: fw, Default: "default", Assets: static.New("/static/"),
				Port: port, UID: os.Getuid(), Token: token, MetricsTimeout: 300 * time.Millisecond,
				Log: slog.New(slog.NewTextHandler(t.Output(), nil))})
			srv.Config.ConnContext = web.ConnContext
			srv.Start()
			t.Cleanup(srv.Close)

			get := func(auth string) (*http.Response, []byte) {
				req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/metrics", nil)
				if auth != "" {
					req.Header.Set("Authorization", "Bearer "+auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp, b
			}
			start := time.Now()
			resp, body := get(token)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("GET /metrics took %v: the slow worker held it up", took)
			}
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != metrics.ContentType {
				t.Fatalf("GET /metrics = %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			p := expfmt.NewTextParser(model.LegacyValidation)
			fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, body)
			}
			for _, tt := range []struct {
				family, profile string
				want            float64
			}{
				{"myco_turns_total", "default", 7}, {"myco_turns_total", "work", 4},
				{"myco_worker_running", "default", 1}, {"myco_worker_running", "idle", 0},
				{"myco_worker_crashes_total", "default", 2}, {"myco_worker_crashes_total", "work", 0},
				{"myco_worker_metrics_gathered", "work", 1}, {"myco_worker_metrics_gathered", "slow", 0},
				{"myco_worker_metrics_gathered", "broken", 0},
			} {
				if got, ok := sample(fams, tt.family, tt.profile); !ok || got != tt.want {
					t.Errorf("%s{profile=%s} = %v (there: %v), want %v", tt.family, tt.profile, got, ok, tt.want)
				}
			}
			if got, ok := sample(fams, "myco_turns_total", "slow"); ok {
				t.Errorf("the slow worker's metrics are in: %v", got)
			}
			if _, ok := sample(fams, "myco_worker_metrics_gathered", "idle"); ok {
				t.Error("a worker that does not run has a gathered sample")
			}
			if n := len(fams["myco_model_request_seconds"].GetMetric()); n != 2 {
				t.Errorf("myco_model_request_seconds has %d series, want default's and work's", n)
			}
			if v, ok := sample(fams, "myco_browser_streams", ""); !ok || v != 0 {
				t.Errorf("myco_browser_streams = %v, %v; want 0", v, ok)
			}
			for _, want := range []string{"# the metrics of profile slow are left out: its worker did not answer within 300ms\n",
				"# the metrics of profile broken are left out: its worker answered 500 Internal Server Error\n"} {
				if !strings.Contains(string(body), want) {
					t.Errorf("no comment %q in\n%s", want, body)
				}
			}
			if n := fw.started("idle"); n != 0 {
				t.Errorf("the scrape started profile idle's worker %d times", n)
			}
			if token != "" {
				if resp, _ := get(""); resp.StatusCode != http.StatusForbidden {
					t.Errorf("GET /metrics without the token = %d, want 403", resp.StatusCode)
				}
			}
		})
	}
}

// sample returns the value of family name's sample of profile ("" for none), and whether
// there is one.
func sample(fams map[string]*dto.MetricFamily, name, profile string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		got := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == "profile" {
				got = l.GetValue()
			}
		}
		if got != profile {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}
