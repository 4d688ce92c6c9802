package handlers

import (
	"bytes"
	"context"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/api"
	"myco.dev/internal/fakemodel"
	"myco.dev/sessions"
)

// sseEvent is one server-sent event as a client reads it: its id (the stream's last event
// ID), its name and its data.
type sseEvent struct {
	id, event, data string
}

// sseStream reads an event stream with the one reader of server-sent events, api's.
type sseStream struct {
	resp   *http.Response
	rd     *api.SSEReader
	cancel context.CancelFunc
}

// noCR fails the test for a CR in what the server writes: the writer makes every line
// break \n, since a bare \r (tool output often has one) would end a line for the reader.
type noCR struct{ t *testing.T }

func (w noCR) Write(p []byte) (int, error) {
	if i := bytes.IndexByte(p, '\r'); i >= 0 {
		w.t.Errorf("the stream holds a CR: %q", p[max(0, i-40):min(len(p), i+40)])
	}
	return len(p), nil
}

func (ts *testServer) stream(t *testing.T, path string, header http.Header) *sseStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("GET %s = %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for k, want := range map[string]string{"Cache-Control": "no-store", "Content-Security-Policy": "default-src 'none'", "X-Content-Type-Options": "nosniff"} {
		if !strings.Contains(resp.Header.Get(k), want) {
			t.Errorf("event stream header %s = %q, want %q", k, resp.Header.Get(k), want)
		}
	}
	s := &sseStream{resp: resp, rd: api.NewSSEReader(io.TeeReader(resp.Body, noCR{t})), cancel: cancel}
	t.Cleanup(s.close)
	return s
}

func (s *sseStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next reads one event (the retry preamble is none).
func (s *sseStream) next(t *testing.T) sseEvent {
	t.Helper()
	ev, err := s.rd.Next()
	if err != nil {
		t.Fatalf("the stream ended: %v", err)
	}
	return sseEvent{id: ev.ID, event: ev.Type, data: ev.Data}
}

// until reads events until one whose data holds marker, and returns them all.
func (s *sseStream) until(t *testing.T, marker string) []sseEvent {
	t.Helper()
	return s.read(t, func(ev sseEvent) bool { return strings.Contains(ev.data, marker) })
}

// read reads events, pings left out, up to and including the first that stop accepts.
func (s *sseStream) read(t *testing.T, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	var out []sseEvent
	for {
		ev := s.next(t)
		if ev.event == "ping" {
			continue
		}
		out = append(out, ev)
		if stop(ev) {
			return out
		}
	}
}

func joinData(evs []sseEvent) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.data)
	}
	return b.String()
}

// jobEnd returns the event id of the end of session id's next job after cursor: the
// update that says the session is idle again. A stream read up to it has every partial
// of the job; the idle marker alone is not enough, for a status partial renders the
// session as it is when the event is rendered, so a replay shows idle early.
func (ts *testServer) jobEnd(t *testing.T, id, cursor string) string {
	t.Helper()
	sub := ts.mgr.Subscribe([]string{id}, cursor)
	defer sub.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		us, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for the end of the job: %v", err)
		}
		for _, u := range us {
			if u.Type == sessions.UpdateState && u.Busy != nil && !*u.Busy {
				return sub.IDOf(u.Seq)
			}
		}
	}
}

// untilID reads a stream up to and including the event with id last.
func (s *sseStream) untilID(t *testing.T, last string) []sseEvent {
	t.Helper()
	return s.read(t, func(ev sseEvent) bool {
		if seqOf(t, ev.id) > seqOf(t, last) {
			t.Fatalf("the stream went past event %s to %s", last, ev.id)
		}
		return ev.id == last
	})
}

// TestEventsStream streams a turn: partials for the user's message, the tool card, the
// streamed text and the final message; event ids grow; a bare CR of a tool's output never
// breaks an event.
func TestEventsStream(t *testing.T) {
	ts := newTestServer(t,
		fakemodel.Turn{Text: "working", ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "work", Args: `{}`}}},
		fakemodel.Turn{Text: "all **done**", ChunkSize: 2})
	ts.tools.f = func(_ context.Context, c model.ToolCall) model.ToolResult {
		return model.ToolResult{CallID: c.ID, Text: "line one\rline two\r\nline three"}
	}
	id, p := ts.session(t)
	cursor := ts.mgr.EventID()
	s := ts.stream(t, p+"events?after="+url.QueryEscape(cursor), nil)
	ts.do(t, "POST", p+"submit", http.Header{"HX-Request": {"true"}}, url.Values{"text": {"go on"}})
	evs := s.untilID(t, ts.jobEnd(t, id, cursor))
	all := joinData(evs)
	for _, want := range []string{
		`<hx-partial hx-target="#messages" hx-swap="beforeend"><article id="m-t1-0" class="msg user">`,
		`<hx-partial hx-target="#live-tail" hx-swap="beforeend">`,
		`<hx-partial hx-target="#tool-c1" hx-swap="outerHTML"><details id="tool-c1" class="tool ok">`,
		"line one", "line two", "<strong>done</strong>", `<button type="submit" id="stop"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the stream lacks %q", want)
		}
	}
	var last uint64
	for _, e := range evs {
		seq := seqOf(t, e.id)
		if seq <= last {
			t.Errorf("event id %s after %d: ids must grow", e.id, last)
		}
		last = seq
	}
}

func seqOf(t *testing.T, id string) uint64 {
	t.Helper()
	_, n, ok := strings.Cut(id, "-")
	if !ok {
		t.Fatalf("event id %q is not BOOT-SEQ", id)
	}
	var v uint64
	for _, c := range n {
		v = v*10 + uint64(c-'0')
	}
	return v
}

// TestEventsReplay cuts the stream mid-turn and reconnects with Last-Event-ID: the page
// kept live by the cut stream and its replay ends up identical to a fresh load of the
// page, and so does a page fed by an uncut stream.
func TestEventsReplay(t *testing.T) {
	release := make(chan struct{})
	ts := newTestServer(t,
		fakemodel.Turn{Text: "first part", ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "work", Args: `{}`}}},
		fakemodel.Turn{Text: "second **part**"})
	ts.tools.f = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		<-release
		return model.ToolResult{CallID: c.ID, Text: "worked\rover"}
	}
	id, p := ts.session(t)
	_, page := ts.do(t, "GET", p, nil, nil)
	i := strings.Index(page, "events?after=")
	cursor, _ := url.QueryUnescape(page[i+len("events?after=") : i+strings.IndexByte(page[i:], '"')])
	whole := ts.stream(t, p+"events?after="+url.QueryEscape(cursor), nil)
	cut := ts.stream(t, p+"events?after="+url.QueryEscape(cursor), nil)
	ts.do(t, "POST", p+"submit", http.Header{"HX-Request": {"true"}}, url.Values{"text": {"go"}})
	first := cut.until(t, `id="tool-c1"`)
	cut.close() // the tunnel drops while the tool runs
	close(release)
	end := ts.jobEnd(t, id, cursor)
	wholeEvs := whole.untilID(t, end)
	// The page's URL still says ?after= the old cursor; Last-Event-ID wins.
	again := ts.stream(t, p+"events?after="+url.QueryEscape(cursor), http.Header{"Last-Event-ID": {first[len(first)-1].id}})
	rest := again.untilID(t, end)

	_, fresh := ts.do(t, "GET", p, nil, nil)
	freshDoc := parsePage(t, fresh)
	for name, evs := range map[string][]sseEvent{"cut and replayed": append(first, rest...), "uncut": wholeEvs} {
		doc := parsePage(t, page)
		for _, e := range evs {
			applyPartials(t, doc, e.data)
		}
		for _, id := range []string{"messages", "live", "status", "title"} {
			if got, want := outer(t, doc, id), outer(t, freshDoc, id); got != want {
				t.Errorf("%s stream: #%s differs from a fresh load:\n got %s\nwant %s", name, id, got, want)
			}
		}
	}
}

// TestEventsReset: a cursor the server does not know (another boot, garbage) gets one
// re-render of the transcript.
func TestEventsReset(t *testing.T) {
	ts := newTestServer(t)
	_, p := ts.session(t)
	for _, h := range []http.Header{{"Last-Event-ID": {"0badboot-12"}}, nil} {
		s := ts.stream(t, p+"events", h)
		ev := s.next(t)
		if !strings.Contains(ev.data, `<hx-partial hx-target="#transcript" hx-swap="innerHTML">`) || ev.id == "" {
			t.Errorf("first event after an unknown cursor (%v) = %+v, want a transcript re-render", h, ev)
		}
	}
}

// TestEventsPing: an idle stream sends ping events, which keep the page's banner away.
func TestEventsPing(t *testing.T) {
	ts := newTestServer(t)
	_, p := ts.session(t)
	s := ts.stream(t, p+"events?after="+url.QueryEscape(ts.mgr.EventID()), nil)
	if ev := s.next(t); ev.event != "ping" {
		t.Errorf("first event of an idle stream = %+v, want a ping", ev)
	}
}

// TestEventsNeverStopTurn closes every stream mid-turn: the turn goes on to its end.
func TestEventsNeverStopTurn(t *testing.T) {
	release := make(chan struct{})
	ts := newTestServer(t, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "work", Args: `{}`}}}, fakemodel.Turn{Text: "finished"})
	ts.tools.f = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		<-release
		return model.ToolResult{CallID: c.ID, Text: "worked"}
	}
	id, p := ts.session(t)
	s := ts.stream(t, p+"events?after="+url.QueryEscape(ts.mgr.EventID()), nil)
	ts.do(t, "POST", p+"submit", http.Header{"HX-Request": {"true"}}, url.Values{"text": {"go"}})
	s.until(t, `id="tool-c1"`)
	s.close()
	close(release)
	ts.waitIdle(t, id)
	sess, _, _ := ts.mgr.Snapshot(t.Context(), id)
	th := sess.Latest()
	if th.LastTurn() != "done" || th.Entries[len(th.Entries)-1].Message.Text() != "finished" {
		t.Errorf("the turn after its stream closed: %q, want done with the answer", th.LastTurn())
	}
}

// TestEventsReplayReplacesWhatThePageHas: a page's cursor is taken before its snapshot, so
// a save between the two is in the page and replayed by its stream; the replay replaces
// the message the page shows (a delete partial of its id comes first) instead of adding it
// again.
func TestEventsReplayReplacesWhatThePageHas(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "the answer"})
	id, p := ts.session(t)
	cursor := ts.mgr.EventID() // as the page would have it, had its snapshot come later
	ts.do(t, "POST", p+"submit", http.Header{"HX-Request": {"true"}}, url.Values{"text": {"hello there"}})
	ts.waitIdle(t, id)
	_, page := ts.do(t, "GET", p, nil, nil)
	s := ts.stream(t, p+"events?after="+url.QueryEscape(cursor), nil)
	appended := regexp.MustCompile(`<hx-partial hx-target="#messages" hx-swap="beforeend"><article id="([^"]+)"`)
	var seen int
	for _, ev := range s.read(t, func(ev sseEvent) bool { return strings.Contains(ev.data, `class="msg assistant"`) }) {
		for _, m := range appended.FindAllStringSubmatch(ev.data, -1) {
			seen++
			if !strings.Contains(page, `id="`+m[1]+`"`) {
				t.Errorf("the page lacks %s, which the replay appends", m[1])
			}
			del := `<hx-partial hx-target="#` + m[1] + `" hx-swap="delete">`
			if i := strings.Index(ev.data, del); i < 0 || i > strings.Index(ev.data, m[0]) {
				t.Errorf("the replay appends %s without first deleting the page's copy:\n%s", m[1], ev.data)
			}
		}
	}
	if seen < 2 {
		t.Errorf("the replay appended %d messages, want the question and the answer", seen)
	}
}

// TestEventsMidStream: a page opened in the middle of an answer shows what streamed before
// its cursor (its settled Markdown rendered, the open end as text), and its stream, from
// that cursor, brings the rest without repeating any of it.
func TestEventsMidStream(t *testing.T) {
	answer := "## Plan\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nThen the rest of the answer, which streams slowly enough to be caught in the middle.\n\n## End\n\nDone."
	ts := newTestServer(t, fakemodel.Turn{Text: answer, ChunkSize: 4, DelayMs: 10})
	id, p := ts.session(t)
	ts.do(t, "POST", p+"submit", http.Header{"HX-Request": {"true"}}, url.Values{"text": {"go"}})
	deadline := time.Now().Add(20 * time.Second)
	var page string
	for {
		_, page = ts.do(t, "GET", p, nil, nil)
		if strings.Contains(page, `<div id="live-md" class="md"><h2>Plan</h2>`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never showed the answer's start mid-stream:\n%s", page)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, after, _ := strings.Cut(page, "events?after=")
	cursor, _ := url.QueryUnescape(after[:strings.IndexByte(after, '"')])
	_, tail, _ := strings.Cut(page, `<div id="live-tail" class="tail">`)
	tail = html.UnescapeString(tail[:strings.Index(tail, "</div>")])
	s := ts.stream(t, p+"events?after="+url.QueryEscape(cursor), nil)
	evs := s.untilID(t, ts.jobEnd(t, id, cursor))
	if !strings.Contains(answer, tail) || strings.Contains(tail, "## Plan") {
		t.Errorf("the page's open end %q is not the unsettled end of what streamed", tail)
	}
	if !strings.Contains(joinData(evs), "<h2>End</h2>") {
		t.Errorf("the stream after the cursor lacks the rest of the answer")
	}
	if strings.Count(joinData(evs), "<h2>Plan</h2>") > 1 {
		t.Errorf("the stream repeats the start of the answer")
	}
}

// TestEventsCompactionFailureNote: a compaction that failed says so in the live notes, in
// the words of its kind (a refused credential), as one sentence after another.
func TestEventsCompactionFailureNote(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "an answer"},
		fakemodel.Turn{Status: 401, ErrorBody: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`})
	id, p := ts.session(t)
	j, err := ts.mgr.Submit(t.Context(), id, model.TextPart("hello"))
	if err != nil {
		t.Fatal(err)
	}
	j.Wait(t.Context())
	cursor := ts.mgr.EventID()
	s := ts.stream(t, p+"events?after="+url.QueryEscape(cursor), nil)
	if _, err := ts.mgr.Compact(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	all := joinData(s.untilID(t, ts.jobEnd(t, id, cursor)))
	if !strings.Contains(all, "The compaction failed. The endpoint of model fake refused the credential (401 Unauthorized)") {
		t.Errorf("the stream lacks the compaction's failure in plain words:\n%s", all)
	}
}
