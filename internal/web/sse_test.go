package web

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSSE: the stream's headers, the retry line, and events split into data lines, a bare
// \r counting as a line break.
func TestSSE(t *testing.T) {
	rec := httptest.NewRecorder()
	sse, err := StartSSE(rec, httptest.NewRequest("GET", "/events", nil))
	if err != nil {
		t.Fatal(err)
	}
	sse.Send("7", "ping", "")
	sse.Send("", "", "a\r\nb\rc\nd")
	sse.SendJSON("8", struct {
		Type string `json:"type"`
	}{"reset"})
	sse.AppendJSON("9", "done", []byte(`{"type":"done"}`))
	sse.Flush()
	want := "retry: 1000\n\n" +
		"id: 7\nevent: ping\ndata: \n\n" +
		"data: a\ndata: b\ndata: c\ndata: d\n\n" +
		"id: 8\ndata: {\"type\":\"reset\"}\n\n" +
		"id: 9\nevent: done\ndata: {\"type\":\"done\"}\n\n"
	if rec.Body.String() != want {
		t.Errorf("stream = %q, want %q", rec.Body.String(), want)
	}
	for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"} {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if !rec.Flushed {
		t.Error("the stream was not flushed")
	}
}

// TestSSEEventData: an event's data written in pieces is framed as the whole would be,
// a \r\n split across two writes counting once; a discarded event leaves nothing, and the
// events around it are whole.
func TestSSEEventData(t *testing.T) {
	rec := httptest.NewRecorder()
	sse, err := StartSSE(rec, httptest.NewRequest("GET", "/events", nil))
	if err != nil {
		t.Fatal(err)
	}
	d := sse.Begin("1", "update")
	for _, p := range []string{"<p>a", "\r", "\nb\r", "\r", "c", "\n", "", "\nd</p>"} {
		if n, _ := d.Write([]byte(p)); n != len(p) {
			t.Errorf("Write(%q) = %d, want %d", p, n, len(p))
		}
	}
	if d.Len() != 17 {
		t.Errorf("Len = %d, want 17", d.Len())
	}
	d.End()
	d = sse.Begin("2", "update")
	d.WriteString("half of a partial\nthat failed")
	d.Discard()
	sse.Append("3", "", "e")
	sse.Flush()
	want := "retry: 1000\n\n" +
		"id: 1\nevent: update\ndata: <p>a\ndata: b\ndata: \ndata: c\ndata: \ndata: d</p>\n\n" +
		"id: 3\ndata: e\n\n"
	if rec.Body.String() != want {
		t.Errorf("stream = %q, want %q", rec.Body.String(), want)
	}
}

// TestSSEPace: a client that does not read is sent little more than streamBehind and is
// then waited for, not written to; once it reads, its stream goes on; one that never does
// is cut off after the stream's Timeout. A reading client is never held up.
func TestSSEPace(t *testing.T) {
	sent := make(chan int, 1000) // the handler's count of events after each one
	cutOff := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sse, err := StartSSE(w, r)
		if err != nil {
			return
		}
		sse.Timeout = time.Second
		event := strings.Repeat("x", 1000)
		for i := 1; ; i++ {
			sse.Append("", "", event)
			if sse.Flush() != nil {
				return
			}
			sent <- i
			if !sse.Pace(r.Context()) {
				close(cutOff)
				return
			}
		}
	}))
	srv.Config.ConnContext = ConnContext
	srv.Start()
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Not reading: the handler stops writing after some 50 KB (a look after streamLook
	// written, streamBehind unread, and what the client's bufio took). Without Pace it would
	// write until both kernels' buffers were full, some 170 KB.
	last := 0
	quiet := time.After(500 * time.Millisecond)
wait:
	for {
		select {
		case last = <-sent:
		case <-quiet:
			break wait
		}
	}
	if last == 0 || last > 100 {
		t.Fatalf("a client that does not read was sent %d events of 1 KB before its stream waited; want 1 to 100", last)
	}
	// Reading: the stream goes on at once.
	br := bufio.NewReader(resp.Body)
	for n := 0; n < 200; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read after %d events: %v", n, err)
		}
		if strings.HasPrefix(line, "data: ") {
			n++
		}
	}
	for last < 150 {
		select {
		case last = <-sent:
		case <-time.After(5 * time.Second):
			t.Fatalf("the stream did not go on once its client read: %d events sent", last)
		}
	}
	// Never again reading: cut off after Timeout.
	select {
	case <-cutOff:
	case <-time.After(10 * time.Second):
		t.Fatal("a client that stopped reading was not cut off")
	}
}
