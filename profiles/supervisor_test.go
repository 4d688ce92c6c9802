package profiles

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"myco.dev/internal/handoff"
	"myco.dev/internal/web"
	"myco.dev/static"
)

// fakeWorkers is a [Workers] whose workers are HTTP servers in this process, each behind
// a real handoff channel, as a worker process is. A profile with an error in errs fails
// to start with it.
type fakeWorkers struct {
	t       *testing.T
	handler http.Handler
	states  []State

	mu      sync.Mutex // guards the fields below
	senders map[string]*handoff.Sender
	errs    map[string]error
	starts  map[string]int
}

func newFakeWorkers(t *testing.T, h http.Handler) *fakeWorkers {
	return &fakeWorkers{t: t, handler: h, senders: map[string]*handoff.Sender{}, errs: map[string]error{}, starts: map[string]int{}}
}

func (f *fakeWorkers) Worker(ctx context.Context, name string) (*handoff.Sender, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errs[name]; err != nil {
		return nil, 0, err
	}
	if snd := f.senders[name]; snd != nil {
		return snd, f.starts[name], nil
	}
	ours, theirs, err := handoff.Pair()
	if err != nil {
		return nil, 0, err
	}
	c, err := net.FileConn(theirs)
	theirs.Close()
	if err != nil {
		return nil, 0, err
	}
	srv := &http.Server{Handler: f.handler}
	go srv.Serve(handoff.Listen(c.(*net.UnixConn)))
	snd := handoff.NewSender(ours)
	f.t.Cleanup(func() { snd.Close(); srv.Close() })
	f.senders[name] = snd
	f.starts[name]++
	return snd, f.starts[name], nil
}

func (f *fakeWorkers) States() []State { return f.states }

func (f *fakeWorkers) Running(name string) (*handoff.Sender, int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	snd := f.senders[name]
	return snd, f.starts[name], snd != nil
}

func (f *fakeWorkers) Sender(ctx context.Context, name string) (*handoff.Sender, error) {
	snd, _, err := f.Worker(ctx, name)
	return snd, err
}

// started returns how many workers of profile name were started.
func (f *fakeWorkers) started(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts[name]
}

func (f *fakeWorkers) fail(name string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[name] = err
}

// fakeWorker is the fake workers' handler: it names the path and Host it got, closes the
// connection unanswered at /crash, and streams a session's events from Last-Event-ID:
// until the client leaves, except session short's, which ends after two, and session
// gone's, which is not found.
func fakeWorker(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/crash"):
		c, _, _ := http.NewResponseController(w).Hijack()
		c.Close()
	case strings.HasSuffix(r.URL.Path, "/s/gone/events"):
		http.NotFound(w, r)
	case strings.HasSuffix(r.URL.Path, "/events"):
		last, _ := strconv.Atoi(r.Header.Get("Last-Event-ID"))
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "id: %d\ndata: <p>one</p>\ndata: <p>two</p>\n\nid: %d\nevent: ping\ndata: \n\n", last+1, last+2)
		http.NewResponseController(w).Flush()
		if !strings.HasSuffix(r.URL.Path, "/s/short/events") {
			<-r.Context().Done()
		}
	default:
		fmt.Fprintf(w, "worker: %s %s host=%s remote=%s", r.Method, r.URL.Path, r.Host, r.RemoteAddr)
	}
}

// testSupervisor is a supervisor on 127.0.0.1 in front of fake workers; profiles work and
// the default exist.
type testSupervisor struct {
	*httptest.Server
	workers *fakeWorkers
	logs    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTestSupervisor(t *testing.T) *testSupervisor {
	t.Helper()
	fw := newFakeWorkers(t, http.HandlerFunc(fakeWorker))
	logs := &syncBuffer{}
	srv := httptest.NewUnstartedServer(nil)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	srv.Config.Handler = NewSupervisor(SupervisorOptions{Workers: fw, Default: "default", Assets: static.New("/static/"),
		Exists: func(name string) bool { return name == "work" || name == "broken" },
		Port:   port, UID: os.Getuid(), Log: slog.New(slog.NewTextHandler(io.MultiWriter(logs, t.Output()), nil))})
	srv.Config.ConnContext = web.ConnContext
	srv.Start()
	t.Cleanup(srv.Close)
	return &testSupervisor{Server: srv, workers: fw, logs: logs}
}

// do sends a request without following redirects and returns the answer and its body.
func (ts *testSupervisor) do(t *testing.T, method, path, body string, h ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func errCode(t *testing.T, body string) string {
	t.Helper()
	var e web.ErrorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" {
		t.Fatalf("not the error envelope: %q (%v)", body, err)
	}
	return e.Error.Code
}

// TestSupervisorRoutes: /profiles/NAME/ reaches NAME's worker with the request's Host;
// an unknown or malformed profile, or an unknown path, is a 404 page (JSON under /api/);
// unsafe requests pass the origin check first.
func TestSupervisorRoutes(t *testing.T) {
	ts := newTestSupervisor(t)
	host := strings.TrimPrefix(ts.URL, "http://")
	for _, tt := range []struct {
		name, method, path string
		header             []string
		status             int
		body               string // contained in the answer
		ctype              string
	}{
		{"a profile", "GET", "/profiles/work/s/1/", nil, 200, "worker: GET /profiles/work/s/1/ host=" + host, ""},
		{"its root", "GET", "/profiles/work", nil, 200, "worker: GET /profiles/work host=", ""},
		{"a post", "POST", "/profiles/work/s", nil, 200, "worker: POST /profiles/work/s", ""},
		{"the default before its directory", "GET", "/profiles/default/", nil, 200, "worker: GET /profiles/default/", ""},
		{"an unknown profile", "GET", "/profiles/nope/", nil, 404, `There is no profile &#34;nope&#34; here.`, "text/html; charset=utf-8"},
		{"an unknown profile's API", "GET", "/profiles/nope/api/sessions", nil, 404, `"code": "not_found"`, "application/json"},
		{"a malformed name", "GET", "/profiles/w%20rk/", nil, 404, "There is no profile", "text/html; charset=utf-8"},
		{"nothing here", "GET", "/nowhere", nil, 404, "There is nothing at this address.", "text/html; charset=utf-8"},
		{"a method not taken", "POST", "/status", nil, 405, "does not take a POST request", "text/html; charset=utf-8"},
		{"a cross-site post", "POST", "/profiles/work/s", []string{"Origin", "http://evil.example"}, 403, `"code": "forbidden_origin"`, "application/json"},
		{"a cross-site stream", "GET", "/profiles/work/s/1/events", []string{"Sec-Fetch-Site", "cross-site"}, 403, `"code": "forbidden_origin"`, "application/json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := ts.do(t, tt.method, tt.path, "", tt.header...)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.body) {
				t.Errorf("%s %s = %d %q, want %d with %q", tt.method, tt.path, resp.StatusCode, body, tt.status, tt.body)
			}
			if tt.ctype != "" && resp.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), tt.ctype)
			}
			if tt.status >= 400 && tt.status != 403 && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
				t.Errorf("the supervisor's own answer lacks the security headers: %v", resp.Header)
			}
		})
	}
	if resp, _ := ts.do(t, "GET", "/", ""); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/profiles/default/" {
		t.Errorf("GET / = %d to %q, want 303 to the default profile", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A foreign Host is refused before anything is routed.
	req, _ := http.NewRequest("GET", ts.URL+"/profiles/work/", nil)
	req.Host = "evil.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a foreign Host: %v %v, want 421", resp, err)
	}
	if n := ts.workers.started("nope"); n != 0 {
		t.Errorf("an unknown profile's worker was started %d times", n)
	}
}

// TestSupervisorWorkerErrors: a profile whose worker is not there answers why: its start
// error with the worker's output, a crash loop with Retry-After, a shutdown; an
// unexpected failure also leaves one log line naming the profile; a worker that drops a
// request is a 502.
func TestSupervisorWorkerErrors(t *testing.T) {
	ts := newTestSupervisor(t)
	for _, tt := range []struct {
		name   string
		err    error
		path   string
		status int
		body   string
		logged bool
	}{
		{"start error", &StartError{Profile: "broken", Output: "config.toml: unknown key \"modle\"", Err: errors.New("exit status 1")},
			"/profiles/broken/", 503, "Profile broken could not start:\n\nconfig.toml: unknown key &#34;modle&#34;", false},
		{"start error without output", &StartError{Profile: "broken", Err: errors.New("exec: no such file")},
			"/profiles/broken/", 503, "Profile broken could not start: exec: no such file", false},
		{"start error in the API", &StartError{Profile: "broken", Output: "bad config", Err: errors.New("exit status 1")},
			"/profiles/broken/api/sessions", 503, `"code": "unavailable"`, false},
		{"crash loop", &BackoffError{Profile: "broken", Crashes: 3, Until: time.Now().Add(30 * time.Second)},
			"/profiles/broken/", 503, "crashed 3 times in the last minutes", false},
		{"shutting down", fmt.Errorf("start: %w", ErrClosed), "/profiles/broken/", 503, "The server is shutting down.", false},
		{"unexpected", errors.New("socketpair: too many open files"), "/profiles/broken/", 503, "could not be reached", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts.workers.fail("broken", tt.err)
			before := strings.Count(ts.logs.String(), "\n")
			resp, body := ts.do(t, "GET", tt.path, "")
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.body) {
				t.Errorf("GET %s = %d %q, want %d with %q", tt.path, resp.StatusCode, body, tt.status, tt.body)
			}
			var be *BackoffError
			if errors.As(tt.err, &be) {
				if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 25 || ra > 31 {
					t.Errorf("Retry-After %q, want about 30 s", resp.Header.Get("Retry-After"))
				}
			}
			logs := ts.logs.String()
			lines := strings.Split(strings.TrimSpace(logs), "\n")[before:]
			if strings.TrimSpace(logs) == "" {
				lines = nil
			}
			if tt.logged && (len(lines) != 1 || !strings.Contains(lines[0], "profile=broken") || !strings.Contains(lines[0], "too many open files")) {
				t.Errorf("log lines %q, want one naming the profile and the error", lines)
			}
			if !tt.logged && len(lines) != 0 {
				t.Errorf("log lines %q, want none: the page says it all", lines)
			}
		})
	}
	if resp, body := ts.do(t, "GET", "/profiles/work/api/crash", ""); resp.StatusCode != http.StatusBadGateway || errCode(t, body) != "worker_failed" {
		t.Errorf("a request the worker dropped = %d %q, want 502 worker_failed", resp.StatusCode, body)
	}
	if !strings.Contains(ts.logs.String(), "profile worker did not answer") {
		t.Errorf("the dropped request left no log line")
	}
}

// TestSupervisorStatus: /status lists the workers' states, by name, and the open merged
// streams; no worker yet is an empty list, not null.
func TestSupervisorStatus(t *testing.T) {
	ts := newTestSupervisor(t)
	resp, body := ts.do(t, "GET", "/status", "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, `"profiles": []`) {
		t.Errorf("GET /status without workers = %d %q, want profiles []", resp.StatusCode, body)
	}
	retry := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ts.workers.states = []State{{Profile: "home", Running: true, PID: 42}, {Profile: "work", Crashes: 3, Retry: retry, Error: "crashed: signal: killed"}}
	_, body = ts.do(t, "GET", "/status", "")
	var got map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"event_streams": float64(0), "profiles": []any{
		map[string]any{"profile": "home", "running": true, "pid": float64(42), "crashes": float64(0)},
		map[string]any{"profile": "work", "running": false, "crashes": float64(3), "retry_at": "2026-01-02T03:04:05Z", "error": "crashed: signal: killed"},
	}}
	if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
		t.Errorf("GET /status = %s, want %s", g, w)
	}
}
