package client

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"myco.dev/api"
	"myco.dev/handlers"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/web"
	"myco.dev/sessions"
	"myco.dev/sessions/sessionstest"
	"myco.dev/static"
)

// server starts one profile's real handlers and session service over a fake model, and
// returns a client of it whose transport is rt(next) when rt is not nil.
func server(t *testing.T, rt func(http.RoundTripper) http.RoundTripper, turns ...fakemodel.Turn) *Client {
	t.Helper()
	fake := fakemodel.New(t, turns...)
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	mgr := sessionstest.Manager(t, sessions.ManagerOptions{Log: log,
		Models: sessionstest.NewModels(sessionstest.Client(fake.URL), "fake")})
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.ConnContext = web.ConnContext
	u, _ := url.Parse("http://" + srv.Listener.Addr().String())
	srv.Config.Handler = handlers.New(handlers.Deps{Profile: "default", Sessions: mgr, Default: "fake", Dir: t.TempDir(),
		Models: []handlers.ModelInfo{{Key: "fake", Protocol: "anthropic-messages", ContextWindow: 1000}},
		Assets: static.New("/static/"), Port: u.Port(), UID: os.Getuid(), Log: log})
	srv.Start()
	t.Cleanup(srv.Close)
	c := New(srv.URL + "/profiles/default/")
	if rt != nil {
		c.HTTP = &http.Client{Transport: rt(http.DefaultTransport)}
	}
	return c
}

// TestRun: a message sent with Run answers with its turn's end and answer; the error of an
// API answer is an *Error with its code.
func TestRun(t *testing.T) {
	c := server(t, nil, fakemodel.Turn{Text: "a, \"quoted\"\nanswer"})
	ctx := t.Context()
	s, err := c.Create(ctx, api.CreateRequest{RequestID: "c"})
	if err != nil || !s.Created {
		t.Fatalf("Create = %+v, %v", s, err)
	}
	out, err := c.Run(ctx, s.SessionID, api.SubmitAction{RequestID: "s", Text: "go"}, 30)
	if err != nil || out.Answer == nil || *out.Answer != "a, \"quoted\"\nanswer" || out.LastTurn != "done" {
		t.Fatalf("Run = %+v, %v", out, err)
	}
	answer, last, code, err := c.Answer(ctx, s.SessionID)
	if err != nil || answer != *out.Answer || last != "done" || code != "" {
		t.Errorf("Answer = %q %q %q %v", answer, last, code, err)
	}
	_, err = c.SelectModel(ctx, s.SessionID, "m", "nope")
	if e, ok := errors.AsType[*Error](err); !ok || e.Status != 400 || e.Code != "unknown_model" || !IsCode(err, "unknown_model") {
		t.Errorf("SelectModel of an unknown model = %v, want 400 unknown_model", err)
	}
	if _, err := c.Snapshot(ctx, "20260101-000000-abcdef", SnapshotOptions{}); !IsCode(err, "not_found") {
		t.Errorf("Snapshot of no session = %v, want not_found", err)
	}
}

// dropping is a transport that cuts every event stream after its first event, as a
// network drop would.
type dropping struct {
	next  http.RoundTripper
	drops atomic.Int32
}

func (d *dropping) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(r)
	if err == nil && resp.Header.Get("Content-Type") == "text/event-stream" {
		resp.Body = &cutAfter{ReadCloser: resp.Body, d: d}
	}
	return resp, err
}

// cutAfter passes a stream through until its first event (after the retry line) has gone
// by, then fails.
type cutAfter struct {
	io.ReadCloser
	d      *dropping
	prev   byte
	blanks int // the blank lines that ended a block: the retry line's, then the event's
	done   bool
}

func (c *cutAfter) Read(p []byte) (int, error) {
	if c.done {
		c.d.drops.Add(1)
		return 0, errors.New("connection reset by the test")
	}
	n, err := c.ReadCloser.Read(p[:1]) // byte by byte, to cut exactly after the event
	if n == 1 {
		if p[0] == '\n' && c.prev == '\n' {
			if c.blanks++; c.blanks == 2 {
				c.done = true
			}
		}
		c.prev = p[0]
	}
	return n, err
}

// TestEventsReconnect: a stream that drops after every event reconnects from the last one
// it read and misses nothing: the events of a whole turn come, each once, in order.
func TestEventsReconnect(t *testing.T) {
	var d *dropping
	c := server(t, func(next http.RoundTripper) http.RoundTripper { d = &dropping{next: next}; return d }, fakemodel.Turn{Text: "streamed"})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := c.Create(ctx, api.CreateRequest{RequestID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Snapshot(ctx, s.SessionID, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.Events(ctx, EventsOptions{Sessions: []string{s.SessionID}, After: snap.EventID})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if _, err := c.Submit(ctx, s.SessionID, api.SubmitAction{RequestID: "s", Text: "go"}); err != nil {
		t.Fatal(err)
	}
	var types []string
	var seqs []uint64
	for {
		ev, err := stream.Next()
		if err != nil {
			t.Fatalf("Next = %v after %v", err, types)
		}
		if _, ok := ev.(api.PingEvent); ok {
			continue
		}
		types = append(types, ev.Info().Type)
		seqs = append(seqs, ev.Info().Seq)
		if st, ok := ev.(api.StateEvent); ok && !st.Busy {
			break
		}
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Errorf("events out of order or repeated: %v (%v)", seqs, types)
		}
	}
	if types[0] != "state" || !contains(types, "done") || stream.Reconnects < len(types)-1 || d.drops.Load() == 0 {
		t.Errorf("events %v over %d reconnects, want a whole turn, reconnecting after each", types, stream.Reconnects)
	}
	if _, err := c.Events(ctx, EventsOptions{Sessions: []string{"20260101-000000-abcdef"}}); !IsCode(err, "not_found") {
		t.Errorf("Events of no session = %v, want not_found", err)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
