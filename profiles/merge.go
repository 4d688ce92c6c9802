package profiles

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"myco.dev/api"
	"myco.dev/internal/web"
)

// One event stream per browser. A page does not open a stream of its own: it asks the
// browser's SharedWorker (static/events-worker.js), which holds one connection to the
// supervisor's /events and subscribes each page's session stream through it. The supervisor
// reads each subscription from its profile's worker and forwards its events, tagged with
// the subscription, into the one stream. When the browser's stream drops, the SharedWorker
// opens a new one and subscribes again from each subscription's last event id, so a page
// gets exactly what it missed.

// mergedPing is the interval of the merged stream's ping events.
const mergedPing = 5 * time.Second

// maxSubscribeBody bounds the body of a subscription, as the API's are bounded.
const maxSubscribeBody = 1 << 20

// streams are the open merged streams.
type streams struct {
	s *supervisor

	mu sync.Mutex // guards m
	m  map[string]*mergedStream
}

func (ss *streams) count() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.m)
}

// mergedStream is one browser's stream and its subscriptions.
type mergedStream struct {
	id  string
	out chan []byte // encoded events to send; bounded, see send

	mu   sync.Mutex // guards subs and closed
	subs map[string]context.CancelFunc
	// closed is set when the stream ended; subscriptions then stop.
	closed bool
	ctx    context.Context
	cancel context.CancelFunc
}

// send queues one event for the browser. A browser that does not keep up for a while is
// cut off: its SharedWorker reconnects and resumes every subscription from its last id.
func (m *mergedStream) send(v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case m.out <- b:
		return true
	case <-m.ctx.Done():
		return false
	case <-t.C:
		m.cancel()
		return false
	}
}

// mergedEvents serves GET /events: one browser's stream. Its first event names the stream,
// for the subscriptions; a ping event comes every few seconds.
func (s *supervisor) mergedEvents(w http.ResponseWriter, r *http.Request) {
	var b [12]byte
	rand.Read(b[:])
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	m := &mergedStream{id: hex.EncodeToString(b[:]), out: make(chan []byte, 256), subs: map[string]context.CancelFunc{}, ctx: ctx, cancel: cancel}
	ss := &s.streams
	ss.mu.Lock()
	if ss.m == nil {
		ss.m = map[string]*mergedStream{}
	}
	ss.m[m.id] = m
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		delete(ss.m, m.id)
		ss.mu.Unlock()
		m.mu.Lock()
		m.closed = true
		for _, c := range m.subs {
			c()
		}
		m.mu.Unlock()
	}()
	sse, err := web.StartSSE(w, r)
	if err != nil {
		return
	}
	if sse.SendJSON("", HelloEvent{Type: "hello", Stream: m.id}) != nil {
		return
	}
	ping := time.NewTicker(mergedPing)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-m.out:
			sse.AppendJSON("", "", b) // json.Marshal's, on one line
			if sse.Flush() != nil {
				return
			}
		case <-ping.C:
			if sse.SendJSON("", PingEvent{Type: "ping"}) != nil {
				return
			}
		}
	}
}

// pageStreams matches the event streams a page subscribes to, the only ones: a session's
// (its page's), and the states of a profile's sessions (the notifications').
var pageStreams = regexp.MustCompile(`^/profiles/([A-Za-z0-9_-]+)/(?:s/[0-9A-Za-z][0-9A-Za-z_-]{0,63}/events|states/events)$`)

// subscribe serves POST /events/STREAM: a page's subscription to a session's events
// through the browser's stream, or its end.
func (s *supervisor) subscribe(w http.ResponseWriter, r *http.Request) {
	s.streams.mu.Lock()
	m := s.streams.m[chi.URLParam(r, "stream")]
	s.streams.mu.Unlock()
	if m == nil {
		web.WriteError(w, web.NewError(http.StatusNotFound, "not_found", "no such event stream: open /events again"))
		return
	}
	var req SubscribeRequest
	if err := web.DecodeJSON(w, r, &req, maxSubscribeBody); err != nil {
		web.WriteError(w, web.Resolve(err, nil))
		return
	}
	if req.Sub == "" || len(req.Sub) > 64 {
		web.WriteError(w, web.NewError(http.StatusBadRequest, "missing_field", "sub names the subscription (at most 64 bytes)"))
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if stop := m.subs[req.Sub]; stop != nil {
		stop()
		delete(m.subs, req.Sub)
	}
	switch req.Op {
	case "unsubscribe":
	case "subscribe":
		match := pageStreams.FindStringSubmatch(req.URL)
		if match == nil || !s.served(match[1]) || m.closed {
			web.WriteError(w, web.NewError(http.StatusBadRequest, "invalid_field", "url must be a session's event stream, /profiles/NAME/s/ID/events, or a profile's states, /profiles/NAME/states/events"))
			return
		}
		ctx, cancel := context.WithCancel(m.ctx)
		m.subs[req.Sub] = cancel
		go s.relay(ctx, m, req.Sub, match[1], req.URL, req.After, r.Host)
	default:
		web.WriteError(w, web.NewError(http.StatusBadRequest, "invalid_field", "op must be subscribe or unsubscribe"))
		return
	}
	web.WriteJSON(w, http.StatusOK, SubscribeAnswer{Sub: req.Sub, Op: req.Op})
}

// relay reads one subscription's stream from its profile's worker and forwards its events
// into the browser's stream, until the subscription ends. When the worker's stream ends (a
// crash, a restart), it reads again from the last event id after a short pause.
func (s *supervisor) relay(ctx context.Context, m *mergedStream, sub, profile, url, after, host string) {
	delay := 250 * time.Millisecond
	for down := false; ctx.Err() == nil; down = true {
		got := s.relayOnce(ctx, m, sub, profile, url, &after, host, down)
		if ctx.Err() != nil {
			return
		}
		if got {
			delay = 250 * time.Millisecond
		}
		if !m.send(SubStatusEvent{Type: "status", Sub: sub, State: "reconnecting"}) {
			return
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// relayOnce follows one connection to the worker's stream and reports whether it carried
// an event. After a "reconnecting" (down), a stream read again is told to the page as
// "live": a session with nothing more to say would leave its page saying it is cut off.
func (s *supervisor) relayOnce(ctx context.Context, m *mergedStream, sub, profile, url string, after *string, host string, down bool) bool {
	p, err := s.proxyFor(ctx, profile)
	if err != nil {
		return false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://profile-"+profile+url, nil)
	if err != nil {
		return false
	}
	req.Host = host
	if s.Token != "" {
		// The worker checks the token as the supervisor does: the browser's cookie is not
		// this request's.
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	if *after != "" {
		req.Header.Set("Last-Event-ID", *after)
	}
	resp, err := p.transport.RoundTrip(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		m.send(SubStatusEvent{Type: "status", Sub: sub, State: "gone", Status: resp.StatusCode})
		<-ctx.Done()
		return false
	}
	if down && !m.send(SubStatusEvent{Type: "status", Sub: sub, State: "live"}) {
		return false
	}
	rd := api.NewSSEReader(resp.Body)
	for got := false; ; got = true {
		ev, err := rd.Next()
		if err != nil || !m.send(SubEvent{Type: "event", Sub: sub, ID: ev.ID, Event: ev.Type, Data: ev.Data}) {
			return got
		}
		if ev.ID != "" {
			*after = ev.ID
		}
	}
}
