package handlers

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
	"myco.dev/internal/metrics"
	"myco.dev/internal/web"
	"myco.dev/static"
)

// TestMetricsRoute: the profile's /metrics answers its registry in the text format, behind
// the owner check like every route; the page and API event streams count themselves open
// while they are. Without a registry there is no /metrics.
func TestMetricsRoute(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "hi"})
	reg := metrics.NewRegistry(metrics.Options{Labels: []metrics.Label{{Name: "profile", Value: "default"}}})
	reg.Counter("myco_test_total", "A test counter.").Add(3)
	streams := reg.GaugeVec("myco_event_streams", "Streams.", "kind")
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.ConnContext = web.ConnContext
	u, _ := url.Parse("http://" + srv.Listener.Addr().String())
	d := Deps{Profile: "default", Sessions: ts.mgr, Default: "fake", Assets: static.New("/static/"), Port: u.Port(), UID: os.Getuid(),
		Ping: 200 * time.Millisecond, Log: slog.New(slog.NewTextHandler(t.Output(), nil)), Metrics: reg, Streams: streams}
	srv.Config.Handler = New(d)
	srv.Start()
	t.Cleanup(srv.Close)
	mts := &testServer{Server: srv, mgr: ts.mgr, base: srv.URL + "/profiles/default/", host: u.Host}

	got, body := mts.do(t, "GET", "/profiles/default/metrics", nil, nil)
	if got.StatusCode != 200 || got.Header.Get("Content-Type") != metrics.ContentType || !strings.Contains(body, `myco_test_total{profile="default"} 3`) {
		t.Fatalf("GET /metrics = %d %s\n%s", got.StatusCode, got.Header.Get("Content-Type"), body)
	}
	if resp, _ := mts.do(t, "GET", "/profiles/default/metrics", http.Header{"Origin": {"http://evil.example"}}, nil); resp.StatusCode != 200 {
		t.Errorf("GET /metrics with a foreign Origin = %d, want 200: a read that changes nothing, as a scraper's", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/profiles/default/metrics", nil)
	req.Host = "evil.example:" + u.Port()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("GET /metrics under a foreign Host = %d, want 421", resp.StatusCode)
	}

	id, _ := ts.session(t)
	waitGauge := func(kind string, want int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); streams.With(kind).Value() != want; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("myco_event_streams{kind=%s} = %d, want %d", kind, streams.With(kind).Value(), want)
			}
		}
	}
	page := mts.stream(t, "/profiles/default/s/"+id+"/events?after="+url.QueryEscape(ts.mgr.EventID()), nil)
	api := mts.stream(t, "/profiles/default/api/events", nil)
	waitGauge("page", 1)
	waitGauge("api", 1)
	page.close()
	api.close()
	waitGauge("page", 0)
	waitGauge("api", 0)

	if resp, _ := ts.do(t, "GET", "/profiles/default/metrics", nil, nil); resp.StatusCode != 404 {
		t.Errorf("GET /metrics of handlers without a registry = %d, want 404", resp.StatusCode)
	}
}
