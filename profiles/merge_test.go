package profiles

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"myco.dev/api"
	"myco.dev/internal/web"
	"myco.dev/static"
)

// open opens a browser's merged stream, with the header's name and value pairs, and
// returns its reader and its name, from the hello event.
func (ts *testSupervisor) open(t *testing.T, header ...string) (*mergedStreamReader, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", ts.URL+"/events", nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /events = %d %v", resp.StatusCode, resp.Header)
	}
	r := &mergedStreamReader{t: t, lines: make(chan string, 64)}
	go func() {
		defer close(r.lines)
		rd := api.NewSSEReader(resp.Body)
		for {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			r.lines <- ev.Data
		}
	}()
	hello := r.next()
	if hello["type"] != "hello" || hello["stream"] == "" {
		t.Fatalf("first event %v, want hello with the stream's name", hello)
	}
	return r, hello["stream"].(string)
}

// mergedStreamReader reads a merged stream's events: one JSON object each.
type mergedStreamReader struct {
	t     *testing.T
	lines chan string
}

// next returns the next event that is not a ping.
func (r *mergedStreamReader) next() map[string]any {
	r.t.Helper()
	for {
		select {
		case d, ok := <-r.lines:
			if !ok {
				r.t.Fatal("the merged stream ended")
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(d), &v); err != nil {
				r.t.Fatalf("event data %q: %v", d, err)
			}
			if v["type"] != "ping" {
				return v
			}
		case <-time.After(10 * time.Second):
			r.t.Fatal("no event within 10 s")
		}
	}
}

// TestMergedStream: a page subscribes to a session's stream (or to its profile's states)
// through the browser's one stream; the worker's events come back tagged with the
// subscription, from the last id the page had; bad subscriptions are refused in the API's
// envelope; /status counts the stream.
func TestMergedStream(t *testing.T) {
	ts := newTestSupervisor(t)
	stream, id := ts.open(t)
	post := func(path, body string) (int, string) {
		resp, b := ts.do(t, "POST", path, body, "Content-Type", "application/json")
		return resp.StatusCode, b
	}
	if code, body := post("/events/"+id, `{"op":"subscribe","sub":"p1","url":"/profiles/work/s/s1/events","after":"5"}`); code != 200 ||
		strings.Join(strings.Fields(body), "") != `{"sub":"p1","op":"subscribe"}` {
		t.Fatalf("subscribe = %d %q", code, body)
	}
	ev := stream.next()
	want := map[string]any{"type": "event", "sub": "p1", "id": "6", "event": "", "data": "<p>one</p>\n<p>two</p>"}
	for k, v := range want {
		if ev[k] != v {
			t.Errorf("event %v: %s = %q, want %q", ev, k, ev[k], v)
		}
	}
	if ev := stream.next(); ev["id"] != "7" || ev["event"] != "ping" {
		t.Errorf("second event %v, want the worker's named event 7", ev)
	}
	_, status := ts.do(t, "GET", "/status", "")
	if !strings.Contains(status, `"event_streams": 1`) {
		t.Errorf("/status with one stream open: %s", status)
	}
	if code, body := post("/events/"+id, `{"op":"unsubscribe","sub":"p1"}`); code != 200 || !strings.Contains(body, `"op": "unsubscribe"`) {
		t.Errorf("unsubscribe = %d %q", code, body)
	}
	// A worker's stream that ends is read again from the last id; one the worker refuses
	// is gone.
	if code, body := post("/events/"+id, `{"op":"subscribe","sub":"p2","url":"/profiles/work/s/short/events"}`); code != 200 {
		t.Fatalf("subscribe = %d %q", code, body)
	}
	for _, want := range []string{"event 1", "event 2", "status reconnecting", "status live", "event 3"} {
		ev := stream.next()
		got := ev["type"].(string) + " "
		if ev["type"] == "status" {
			got += ev["state"].(string)
		} else {
			got += ev["id"].(string)
		}
		if got != want || ev["sub"] != "p2" {
			t.Fatalf("event %v, want %s of p2", ev, want)
		}
	}
	post("/events/"+id, `{"op":"unsubscribe","sub":"p2"}`)
	// A profile's states (the notifications') are relayed the same way.
	if code, body := post("/events/"+id, `{"op":"subscribe","sub":"p4","url":"/profiles/work/states/events"}`); code != 200 {
		t.Fatalf("subscribe to the states = %d %q", code, body)
	}
	for {
		ev := stream.next()
		if ev["sub"] != "p4" {
			continue // the end of p2's
		}
		if ev["type"] != "event" || ev["id"] != "1" {
			t.Errorf("event %v, want the states' event 1", ev)
		}
		break
	}
	post("/events/"+id, `{"op":"unsubscribe","sub":"p4"}`)
	if code, _ := post("/events/"+id, `{"op":"subscribe","sub":"p3","url":"/profiles/work/s/gone/events"}`); code != 200 {
		t.Fatalf("subscribe = %d", code)
	}
	for {
		ev := stream.next()
		if ev["sub"] != "p3" {
			continue // the end of p2's
		}
		if ev["type"] != "status" || ev["state"] != "gone" || ev["status"] != float64(404) {
			t.Errorf("event %v, want p3 gone with status 404", ev)
		}
		break
	}
	for _, tt := range []struct {
		name, path, body string
		ctype            string
		status           int
		code             string
	}{
		{"no such stream", "/events/nope", `{"op":"subscribe","sub":"p"}`, "application/json", 404, "not_found"},
		{"no sub", "/events/" + id, `{"op":"subscribe","url":"/profiles/work/s/s1/events"}`, "application/json", 400, "missing_field"},
		{"not a session stream", "/events/" + id, `{"op":"subscribe","sub":"p","url":"/profiles/work/api/events"}`, "application/json", 400, "invalid_field"},
		{"not the states", "/events/" + id, `{"op":"subscribe","sub":"p","url":"/profiles/work/states/events/more"}`, "application/json", 400, "invalid_field"},
		{"an unknown profile", "/events/" + id, `{"op":"subscribe","sub":"p","url":"/profiles/nope/s/s1/events"}`, "application/json", 400, "invalid_field"},
		{"no op", "/events/" + id, `{"sub":"p"}`, "application/json", 400, "invalid_field"},
		{"an unknown field", "/events/" + id, `{"sub":"p","colour":1}`, "application/json", 400, "unknown_field"},
		{"not json", "/events/" + id, `sub=p`, "application/x-www-form-urlencoded", 415, "unsupported_media_type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := ts.do(t, "POST", tt.path, tt.body, "Content-Type", tt.ctype)
			if resp.StatusCode != tt.status || errCode(t, body) != tt.code {
				t.Errorf("POST %s %s = %d %q, want %d %s", tt.path, tt.body, resp.StatusCode, body, tt.status, tt.code)
			}
		})
	}
	// A subscription from another site is refused like any state-changing request.
	if resp, _ := ts.do(t, "POST", "/events/"+id, `{"op":"unsubscribe","sub":"p1"}`, "Content-Type", "application/json", "Origin", "http://evil.example"); resp.StatusCode != 403 {
		t.Errorf("a cross-site subscription = %d, want 403", resp.StatusCode)
	}
}

// TestMergedStreamToken: in token mode the worker wants the token of every request, the
// relay's too; the relay was refused (403, the page's stream "gone") since it sent none.
func TestMergedStreamToken(t *testing.T) {
	const token = "the-token"
	srv := httptest.NewUnstartedServer(nil)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	fw := newFakeWorkers(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "token required", http.StatusForbidden)
			return
		}
		fakeWorker(w, r)
	}))
	srv.Config.Handler = NewSupervisor(SupervisorOptions{Workers: fw, Default: "default", Assets: static.New("/static/"),
		Port: port, UID: os.Getuid(), Token: token, Log: slog.New(slog.NewTextHandler(t.Output(), nil))})
	srv.Config.ConnContext = web.ConnContext
	srv.Start()
	t.Cleanup(srv.Close)
	ts := &testSupervisor{Server: srv, workers: fw}
	stream, id := ts.open(t, "Authorization", "Bearer "+token)
	resp, body := ts.do(t, "POST", "/events/"+id, `{"op":"subscribe","sub":"p1","url":"/profiles/default/s/s1/events","after":"4"}`,
		"Content-Type", "application/json", "Authorization", "Bearer "+token)
	if resp.StatusCode != 200 {
		t.Fatalf("subscribe = %d %s", resp.StatusCode, body)
	}
	if ev := stream.next(); ev["type"] != "event" || ev["id"] != "5" {
		t.Errorf("first event of the subscription = %v, want the worker's event 5", ev)
	}
}
