// Package fakemodel is a scripted model server for tests and the demo. It speaks the three
// wire protocols myco uses (anthropic-messages at /v1/messages, openai-responses at
// /responses, openai-completions at /chat/completions) over real HTTP on 127.0.0.1, serves
// scripted turns in order whichever endpoint asks, checks requests the way the real APIs do
// (every tool call answered, no orphan results), and records what it received.
package fakemodel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Turn is one scripted response. The zero Turn is an empty answer.
type Turn struct {
	// An HTTP failure instead of a stream: Status with an error body of ErrorType and
	// ErrorMessage, and optional Retry-After / retry-after-ms headers.
	Status       int    `json:"status,omitempty"`
	ErrorType    string `json:"error_type,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
	RetryAfter   string `json:"retry_after,omitempty"`
	RetryAfterMs string `json:"retry_after_ms,omitempty"`
	// ErrorBody, when set with Status, is the error response's body exactly: a provider's
	// real error (a context-length refusal, say) in its own shape.
	ErrorBody string `json:"error_body,omitempty"`

	// The response content, streamed in this order: thinking, text, tool calls.
	Thinking string `json:"thinking,omitempty"`
	// RedactedThinking is an anthropic redacted_thinking block's data (anthropic only).
	RedactedThinking string `json:"redacted_thinking,omitempty"`
	// Text is the answer. "{{tool_result}}" in it is replaced by the text of the last tool
	// result in the request, so a scripted answer can report what a tool printed.
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Stop is "" (end, or tool use when there are tool calls), "max_tokens", "refusal" or
	// "pause" (anthropic pause_turn).
	Stop  string `json:"stop,omitempty"`
	Usage Usage  `json:"usage,omitzero"`

	// MidStreamError, when set, is an error type sent as an in-stream error event after the
	// content, ending the stream.
	MidStreamError string `json:"mid_stream_error,omitempty"`
	// Drop closes the connection after the content without the terminal event.
	Drop bool `json:"drop,omitempty"`
	// ChunkSize splits text and arguments into deltas of this many bytes (default 7).
	ChunkSize int `json:"chunk_size,omitempty"`
	// DelayMs pauses between deltas, so a test can cancel mid-stream.
	DelayMs int `json:"delay_ms,omitempty"`
	// HangMs holds the response before anything is sent.
	HangMs int `json:"hang_ms,omitempty"`

	// Hostile behaviour, for tests of the client's defences.
	//
	// Silent accepts the request and sends nothing, not even the status line, until the
	// client goes away. Location is sent with a 3xx Status, for a redirect. Stall holds the
	// stream open without a byte more, after the content and in place of the terminal
	// events, until the client goes away.
	//
	// Raw, when set, replaces the protocol's stream (and the request checks): a 200
	// text/event-stream response whose body is these pieces exactly, each written and
	// flushed in turn. Repeat is then written again and again until the client goes away
	// (or 1 GiB, a backstop), an endless stream; Stall after Raw holds the connection open.
	Silent   bool     `json:"silent,omitempty"`
	Location string   `json:"location,omitempty"`
	Stall    bool     `json:"stall,omitempty"`
	Raw      []string `json:"raw,omitempty"`
	Repeat   string   `json:"repeat,omitempty"`

	// Chat Completions quirks: ReasoningField is "reasoning_content" (default) or
	// "reasoning"; WholeToolCalls sends each call complete in one chunk (Ollama);
	// UsageOnFinish puts usage on the finish_reason chunk (llama.cpp) instead of a separate
	// chunk after it. Usage is sent only when the request asks for it with stream_options.
	ReasoningField string `json:"reasoning_field,omitempty"`
	WholeToolCalls bool   `json:"whole_tool_calls,omitempty"`
	UsageOnFinish  bool   `json:"usage_on_finish,omitempty"`
}

// ToolCall is a scripted tool call; Args is its JSON arguments.
type ToolCall struct {
	ID   string `json:"id,omitempty"` // generated when empty
	Name string `json:"name"`
	Args string `json:"args"`
}

// Usage is scripted token accounting; Input counts uncached prompt tokens.
type Usage struct {
	Input      int `json:"input,omitempty"`
	Output     int `json:"output,omitempty"`
	CacheRead  int `json:"cache_read,omitempty"`
	CacheWrite int `json:"cache_write,omitempty"`
	Reasoning  int `json:"reasoning,omitempty"`
}

// Request is a request the server received.
type Request struct {
	Path     string
	Query    string // the raw query, without "?"
	Header   http.Header
	Body     []byte
	Received time.Time // when its headers arrived
}

// JSON decodes the request body into a generic map.
func (r Request) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// Server is a running fake model. It is safe for concurrent use.
type Server struct {
	URL string // http://127.0.0.1:PORT, with no path

	srv *http.Server
	ln  net.Listener

	mu       sync.Mutex // guards the fields below
	turns    []Turn
	requests []Request
	served   int
	loop     bool
}

// Start serves turns on a fresh 127.0.0.1 port until Close.
func Start(turns ...Turn) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen: %w", err)
	}
	s := &Server{ln: ln, turns: turns, URL: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.handle(serveAnthropic))
	mux.HandleFunc("POST /responses", s.handle(serveResponses))
	mux.HandleFunc("POST /chat/completions", s.handle(serveCompletions))
	s.srv = &http.Server{Handler: mux}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server and drops open connections.
func (s *Server) Close() error { return s.srv.Close() }

// Script appends turns to the queue.
func (s *Server) Script(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// Loop makes the server start the script again from its first turn when it runs out.
func (s *Server) Loop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loop = true
}

// Requests returns copies of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Served reports how many scripted turns have been used.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// next records req and pops the next turn.
func (s *Server) next(req Request) (Turn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	if s.served >= len(s.turns) {
		if !s.loop || len(s.turns) == 0 {
			return Turn{}, false
		}
		s.served = 0
	}
	t := s.turns[s.served]
	s.served++
	return t, true
}

// serveFunc renders one turn for one protocol. body is the request body, already read;
// a validation failure is written as that protocol's 400. ctx ends when the client goes.
type serveFunc func(ctx context.Context, w http.ResponseWriter, body []byte, t Turn)

func (s *Server) handle(serve serveFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		received := time.Now()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		t, ok := s.next(Request{Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, Received: received})
		if !ok {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "fakemodel: no scripted turn left", Turn{})
			return
		}
		if t.HangMs > 0 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Duration(t.HangMs) * time.Millisecond):
			}
		}
		if t.Silent {
			<-r.Context().Done()
			return
		}
		if t.Status != 0 {
			writeError(w, t.Status, t.ErrorType, t.ErrorMessage, t)
			return
		}
		if t.Raw != nil || t.Repeat != "" {
			serveRaw(r.Context(), w, t)
			return
		}
		serve(r.Context(), w, body, t)
	}
}

// writeError writes an error body in the nested shape all three protocols use.
func writeError(w http.ResponseWriter, status int, typ, msg string, t Turn) {
	if typ == "" {
		typ = "api_error"
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	if t.RetryAfter != "" {
		w.Header().Set("Retry-After", t.RetryAfter)
	}
	if t.RetryAfterMs != "" {
		w.Header().Set("retry-after-ms", t.RetryAfterMs)
	}
	if t.Location != "" {
		w.Header().Set("Location", t.Location)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if t.ErrorBody != "" {
		io.WriteString(w, t.ErrorBody)
		return
	}
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	w.Write(b)
}

// serveRaw writes t.Raw as the response body, then t.Repeat until the client goes away,
// then holds the connection open if t.Stall.
func serveRaw(ctx context.Context, w http.ResponseWriter, t Turn) {
	s := newStream(ctx, w, t)
	for _, p := range t.Raw {
		s.pause()
		io.WriteString(w, p)
		s.rc.Flush()
	}
	if t.Repeat != "" {
		chunk := strings.Repeat(t.Repeat, max(1, 32<<10/len(t.Repeat)))
		for sent := 0; sent < 1<<30; sent += len(chunk) {
			if _, err := io.WriteString(w, chunk); err != nil {
				return // the client went away
			}
		}
		return
	}
	if t.Stall {
		s.cut()
	}
}

// stream is an SSE response writer that flushes every event.
type stream struct {
	ctx   context.Context // ends when the client goes away
	w     http.ResponseWriter
	rc    *http.ResponseController
	delay time.Duration
	stall bool
}

func newStream(ctx context.Context, w http.ResponseWriter, t Turn) *stream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	return &stream{ctx: ctx, w: w, rc: http.NewResponseController(w), delay: time.Duration(t.DelayMs) * time.Millisecond, stall: t.Stall}
}

// event writes one event; name may be empty for data-only protocols. v is JSON-encoded
// unless it is a string, which is written as is.
func (s *stream) event(name string, v any) {
	var data string
	if str, ok := v.(string); ok {
		data = str
	} else {
		b, _ := json.Marshal(v)
		data = string(b)
	}
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	s.rc.Flush()
}

// comment writes an SSE comment line (a keep-alive).
func (s *stream) comment(text string) {
	fmt.Fprintf(s.w, ": %s\n\n", text)
	s.rc.Flush()
}

// pause waits between deltas when the turn asks for it.
func (s *stream) pause() {
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
}

// cut ends the response without its terminal events: with Stall it holds the connection
// open, silent, until the client goes away; otherwise it closes the connection abruptly.
func (s *stream) cut() {
	s.rc.Flush()
	if s.stall {
		<-s.ctx.Done()
		return
	}
	if hj, ok := s.w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// chunks splits s into pieces of n bytes (7 when n <= 0) without splitting UTF-8 runes.
func chunks(s string, n int) []string {
	if n <= 0 {
		n = 7
	}
	var out []string
	for len(s) > 0 {
		i := min(n, len(s))
		for i < len(s) && !utf8Start(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// answerText applies the {{tool_result}} placeholder.
func answerText(t Turn, lastToolResult string) string {
	return strings.ReplaceAll(t.Text, "{{tool_result}}", strings.TrimSpace(lastToolResult))
}

// callID returns the scripted id or a generated one.
func callID(c ToolCall, prefix string, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("%s%d", prefix, i+1)
}
