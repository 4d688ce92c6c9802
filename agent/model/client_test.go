package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// lineProtocol is a minimal protocol for testing the client: the body is the request's
// system prompt, and the data of each response event is streamed as a text delta. Data
// ending in "!midstream" is a mid-stream error after its text.
type lineProtocol struct{}

func (lineProtocol) Name() string                   { return "line" }
func (lineProtocol) Path() string                   { return "/line" }
func (lineProtocol) Header(h http.Header, k string) { h.Set("X-Key", k) }
func (lineProtocol) Encode(r Request) ([]byte, error) {
	return []byte(r.System), nil
}
func (lineProtocol) Decode(events iter.Seq2[Event, error], yield func(Chunk) bool) error {
	var text strings.Builder
	for ev, err := range events {
		if err != nil {
			return fmt.Errorf("read line stream: %w: %w", ErrTruncatedStream, err)
		}
		data, mid := strings.CutSuffix(ev.Data, "!midstream")
		if !yield(TextDelta{Text: data}) {
			return nil
		}
		if mid {
			return &ProviderError{MidStream: true, Type: "overloaded_error", Retryable: true}
		}
		text.WriteString(data)
	}
	yield(Done{Message: Message{Role: Assistant, Parts: []Part{TextPart(text.String())}}, Stop: StopEnd})
	return nil
}

// eventData returns the data of all events, concatenated.
func eventData(events iter.Seq2[Event, error]) (string, error) {
	var b strings.Builder
	for ev, err := range events {
		if err != nil {
			return b.String(), err
		}
		b.WriteString(ev.Data)
	}
	return b.String(), nil
}

type reply struct {
	status int
	header map[string]string
	body   string
}

// server answers with the replies in order and counts requests. The body of a 2xx reply
// is sent as the data of one event.
func server(t *testing.T, replies ...reply) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(replies) {
			w.WriteHeader(599)
			return
		}
		rp := replies[i]
		for k, v := range rp.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(rp.status)
		if rp.status/100 == 2 {
			io.WriteString(w, "data: "+rp.body+"\n\n")
			return
		}
		io.WriteString(w, rp.body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func fastRetry(n int) RetryPolicy {
	return RetryPolicy{MaxAttempts: n, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Multiplier: 2}
}

func collect(c *Client, ctx context.Context, req Request) (text string, notices []Notice, err error) {
	var b strings.Builder
	for ch, e := range c.Stream(ctx, req) {
		if e != nil {
			return b.String(), notices, e
		}
		switch ch := ch.(type) {
		case TextDelta:
			b.WriteString(ch.Text)
		case Notice:
			notices = append(notices, ch)
		}
	}
	return b.String(), notices, nil
}

func TestClientRetry(t *testing.T) {
	tests := []struct {
		name        string
		replies     []reply
		attempts    int
		wantText    string
		wantErr     string
		wantTries   int32
		wantNotices int
	}{
		{"ok", []reply{{200, nil, "hi"}}, 3, "hi", "", 1, 0},
		{"529 then ok", []reply{{529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}, {200, nil, "hi"}}, 3, "hi", "", 2, 1},
		{"429 500 then ok", []reply{{429, nil, ""}, {500, nil, ""}, {200, nil, "ok"}}, 3, "ok", "", 3, 2},
		{"408 retried", []reply{{408, nil, ""}, {200, nil, "ok"}}, 3, "ok", "", 2, 1},
		{"attempts exhausted", []reply{{503, nil, ""}, {503, nil, ""}, {503, nil, ""}}, 3, "", "returned 503", 3, 2},
		{"400 at once", []reply{{400, nil, `{"error":{"type":"invalid_request_error","message":"bad"}}`}, {200, nil, "x"}}, 3, "", "invalid_request_error", 1, 0},
		{"401 at once", []reply{{401, nil, ""}, {200, nil, "x"}}, 3, "", "401", 1, 0},
		{"413 at once", []reply{{413, nil, ""}, {200, nil, "x"}}, 3, "", "413", 1, 0},
		{"retry disabled", []reply{{503, nil, ""}, {200, nil, "x"}}, 1, "", "503", 1, 0},
		{"x-should-retry false", []reply{{503, map[string]string{"x-should-retry": "false"}, ""}, {200, nil, "x"}}, 3, "", "503", 1, 0},
		{"mid-stream never retried", []reply{{200, nil, "par!midstream"}, {200, nil, "x"}}, 3, "par", "overloaded_error", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, n := server(t, tt.replies...)
			c := &Client{Protocol: lineProtocol{}, BaseURL: srv.URL, Retry: fastRetry(tt.attempts)}
			text, notices, err := collect(c, t.Context(), Request{System: "body"})
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Stream error = %v, want one containing %q", err, tt.wantErr)
			}
			if text != tt.wantText {
				t.Errorf("text = %q, want %q", text, tt.wantText)
			}
			if got := n.Load(); got != tt.wantTries {
				t.Errorf("requests = %d, want %d", got, tt.wantTries)
			}
			if len(notices) != tt.wantNotices {
				t.Errorf("notices = %d, want %d", len(notices), tt.wantNotices)
			}
			// The error says how often the request was sent: what a person is told of a
			// failure after retries counts them.
			if pe, ok := errors.AsType[*ProviderError](err); ok && pe.Attempts != int(tt.wantTries) {
				t.Errorf("Attempts = %d, want %d", pe.Attempts, tt.wantTries)
			}
		})
	}
}

func TestClientConnectionErrorRetried(t *testing.T) {
	srv, _ := server(t)
	url := srv.URL
	srv.Close() // nothing listens there any more
	c := &Client{Protocol: lineProtocol{}, BaseURL: url, Retry: fastRetry(2)}
	_, notices, err := collect(c, t.Context(), Request{})
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Status != 0 || pe.Attempts != 2 {
		t.Fatalf("err = %v, want a transport ProviderError after 2 attempts", err)
	}
	if len(notices) != 1 {
		t.Errorf("notices = %d, want 1", len(notices))
	}
}

func TestClientRequestTooLarge(t *testing.T) {
	srv, n := server(t, reply{200, nil, "x"})
	c := &Client{Protocol: lineProtocol{}, BaseURL: srv.URL, MaxRequestBytes: 10, Retry: fastRetry(3)}
	_, _, err := collect(c, t.Context(), Request{System: strings.Repeat("a", 11)})
	var tl *RequestTooLargeError
	if !errors.As(err, &tl) || tl.Size != 11 || tl.Limit != 10 {
		t.Fatalf("err = %v, want RequestTooLargeError{11, 10}", err)
	}
	if !strings.Contains(err.Error(), "11") || !strings.Contains(err.Error(), "10") {
		t.Errorf("error %q does not name both byte counts", err)
	}
	if n.Load() != 0 {
		t.Errorf("requests = %d, want 0: an oversized body must not be sent", n.Load())
	}
	// exactly at the cap is fine
	_, _, err = collect(c, t.Context(), Request{System: strings.Repeat("a", 10)})
	if err != nil {
		t.Fatalf("body at the cap: %v", err)
	}
}

func TestClientCancelStopsRetryWait(t *testing.T) {
	srv, n := server(t, reply{503, nil, ""}, reply{200, nil, "x"})
	c := &Client{Protocol: lineProtocol{}, BaseURL: srv.URL,
		Retry: RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Hour, MaxBackoff: time.Hour, Multiplier: 2}}
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	stopped := errors.New("stopped by user")
	var err error
	for ch, e := range c.Stream(ctx, Request{}) {
		if _, ok := ch.(Notice); ok {
			cancel(stopped) // the client is now waiting an hour
		}
		if e != nil {
			err = e
		}
	}
	if !errors.Is(err, stopped) {
		t.Fatalf("err = %v, want the cancel cause", err)
	}
	if n.Load() != 1 {
		t.Errorf("requests = %d, want 1", n.Load())
	}
}

func TestClientKeyErrorSurfacesAtUse(t *testing.T) {
	srv, n := server(t, reply{200, nil, "x"})
	c := &Client{Protocol: lineProtocol{}, BaseURL: srv.URL, Retry: fastRetry(3),
		Key: func() (string, error) { return "", fmt.Errorf("environment variable XAI_API_KEY is not set") }}
	_, _, err := collect(c, t.Context(), Request{})
	if _, ok := errors.AsType[*CredentialError](err); !ok || !strings.Contains(err.Error(), "XAI_API_KEY") {
		t.Fatalf("err = %v, want a *CredentialError naming the variable", err)
	}
	if n.Load() != 0 {
		t.Errorf("requests = %d, want 0", n.Load())
	}
}

func TestRetryDelay(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 5, InitialBackoff: 500 * time.Millisecond, MaxBackoff: 3 * time.Second, Multiplier: 2}
	tests := []struct {
		name  string
		n     int
		after time.Duration
		want  time.Duration
	}{
		{"first", 1, 0, 500 * time.Millisecond},
		{"second", 2, 0, time.Second},
		{"capped", 4, 0, 3 * time.Second},
		{"retry-after longer wins", 1, 2 * time.Second, 2 * time.Second},
		{"retry-after shorter ignored", 2, 100 * time.Millisecond, time.Second},
		{"retry-after bounded", 1, time.Minute, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.Delay(tt.n, &ProviderError{Status: 429, Retryable: true, RetryAfter: tt.after})
			if got != tt.want {
				t.Errorf("Delay(%d, retry-after %s) = %s, want %s", tt.n, tt.after, got, tt.want)
			}
		})
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{"fractional", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"ms wins", map[string]string{"Retry-After": "3", "Retry-After-Ms": "250"}, 250 * time.Millisecond},
		{"date", map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.h {
				h.Set(k, v)
			}
			if got := RetryAfter(h, now); got != tt.want {
				t.Errorf("RetryAfter(%v) = %s, want %s", tt.h, got, tt.want)
			}
		})
	}
}

func TestClientHonoursRetryAfter(t *testing.T) {
	srv, _ := server(t, reply{429, map[string]string{"Retry-After-Ms": "20"}, ""}, reply{200, nil, "x"})
	c := &Client{Protocol: lineProtocol{}, BaseURL: srv.URL,
		Retry: RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: time.Second, Multiplier: 2}}
	_, notices, err := collect(c, t.Context(), Request{})
	if err != nil {
		t.Fatal(err)
	}
	if len(notices) != 1 || notices[0].Delay != 20*time.Millisecond {
		t.Fatalf("notices = %+v, want one with a 20ms delay", notices)
	}
	if !strings.Contains(notices[0].Text, "429") || !strings.Contains(notices[0].Text, "attempt 2 of 2") {
		t.Errorf("notice text %q does not describe the failure and the retry", notices[0].Text)
	}
}

func TestErrorBody(t *testing.T) {
	tests := []struct{ body, typ, msg string }{
		{`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, "rate_limit_error", "slow down"},
		{`{"error":{"message":"No tool call found","type":"invalid_request_error","param":"input","code":null}}`, "invalid_request_error", "No tool call found"},
		{`{"error":{"message":"quota","code":"insufficient_quota"}}`, "insufficient_quota", "quota"},
		{`{"type":"error","code":"server_error","message":"flat"}`, "server_error", "flat"},
		{`{"error":"plain string"}`, "", "plain string"},
		{`not json`, "", ""},
	}
	for _, tt := range tests {
		typ, msg := ErrorBody([]byte(tt.body))
		if typ != tt.typ || msg != tt.msg {
			t.Errorf("ErrorBody(%s) = %q, %q; want %q, %q", tt.body, typ, msg, tt.typ, tt.msg)
		}
	}
}

// brokenProtocol's stream ends before its first chunk, like a connection dropped right
// after the response headers.
type brokenProtocol struct{ lineProtocol }

func (brokenProtocol) Decode(events iter.Seq2[Event, error], yield func(Chunk) bool) error {
	text, _ := eventData(events)
	if text == "drop" {
		return fmt.Errorf("read body: %w", ErrTruncatedStream)
	}
	return lineProtocol{}.Decode(Events(strings.NewReader("data: "+text+"\n\n"), 0), yield)
}

func TestClientRetriesStreamDroppedBeforeFirstChunk(t *testing.T) {
	srv, n := server(t, reply{200, nil, "drop"}, reply{200, nil, "ok"})
	c := &Client{Protocol: brokenProtocol{}, BaseURL: srv.URL, Retry: fastRetry(3)}
	text, notices, err := collect(c, t.Context(), Request{})
	if err != nil || text != "ok" || n.Load() != 2 || len(notices) != 1 {
		t.Fatalf("text %q, err %v, requests %d, notices %d; want ok after one retry", text, err, n.Load(), len(notices))
	}
}

// TestShownURL: a base_url as messages show it keeps no credential: no userinfo, no query.
func TestShownURL(t *testing.T) {
	for _, tt := range []struct{ raw, want string }{
		{"https://gw.example/v1", "https://gw.example/v1"},
		{"https://user:secret@gw.example/v1?key=secret#frag", "https://gw.example/v1"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"http://[::1", ""},
	} {
		if got := ShownURL(tt.raw); got != tt.want {
			t.Errorf("ShownURL(%q) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}
