package web

import (
	"net/http/httptest"
	"testing"
)

// TestSSE: the stream's headers, the retry line, and events split into data lines, a bare
// \r counting as a line break.
func TestSSE(t *testing.T) {
	rec := httptest.NewRecorder()
	sse, err := StartSSE(rec)
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
