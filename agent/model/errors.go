package model

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// ProviderError is a failure reported by the model endpoint: an HTTP error status, or an
// error event inside an already-started stream (MidStream).
type ProviderError struct {
	Status     int    // HTTP status; 0 for a transport failure or a mid-stream error without one
	Type       string // provider error type or code, e.g. "rate_limit_error"
	Code       string // the provider's error code, where it sends one beside the type ("context_length_exceeded")
	Message    string
	Retryable  bool
	RetryAfter time.Duration // what the provider asked for; 0 when it did not say
	MidStream  bool
	Err        error // the transport error, when there was no response
	// Attempts is how many times [Client.Stream] sent the request before it gave up with
	// this error, retries included; 0 when it was not counted.
	Attempts int
}

func (e *ProviderError) Error() string {
	var s string
	switch {
	case e.MidStream:
		s = "model stream failed"
	case e.Status != 0:
		s = fmt.Sprintf("model endpoint returned %d", e.Status)
	default:
		s = "model request failed"
	}
	if e.Type != "" {
		s += " (" + e.Type + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *ProviderError) Unwrap() error { return e.Err }

// Overflow reports whether the provider refused the request because its input does not
// fit: a 413, or a context-length error in any of the shapes the three protocols' servers
// use (Anthropic's "prompt is too long", OpenAI's context_length_exceeded, llama.cpp's
// exceed_context_size_error, vLLM's "maximum context length"). Compacting the session
// can make the same turn fit.
func (e *ProviderError) Overflow() bool {
	if e.Status == 413 {
		return true
	}
	for _, c := range []string{e.Type, e.Code} {
		switch c {
		case "context_length_exceeded", "exceed_context_size_error", "context_window_exceeded", "request_too_large", "string_above_max_length":
			return true
		}
	}
	msg := strings.ToLower(e.Message)
	for _, p := range overflowPhrases {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// overflowPhrases are the words of the context-length errors of servers that send no code.
var overflowPhrases = []string{
	"prompt is too long", "maximum context length", "context length", "context window",
	"exceeds the available context", "exceed_context_size", "too many tokens", "input is too long",
	"reduce the length of the messages",
}

// Rejected reports whether the provider refused the request outright for what it holds,
// so that sending it again would fail the same way: a 400, 413 or 422 answered before
// anything streamed, or a context overflow at any point. Such a turn is rewound, as one
// over max_request_bytes is, rather than left to poison every turn after it.
func (e *ProviderError) Rejected() bool {
	if e.Overflow() {
		return true
	}
	return !e.MidStream && (e.Status == 400 || e.Status == 413 || e.Status == 422)
}

// CredentialError is a credential that could not be looked up for a request ([Client.Key]
// failed: an environment variable that is not set, a file that is missing). Nothing was
// sent, and nothing is retried: the lookup would fail the same way.
type CredentialError struct{ Err error }

func (e *CredentialError) Error() string { return "look up the credential: " + e.Err.Error() }
func (e *CredentialError) Unwrap() error { return e.Err }

// RequestTooLargeError is a request whose serialized body exceeds the configured
// max_request_bytes. It is detected before upload and never retried.
type RequestTooLargeError struct {
	Size, Limit int
}

func (e *RequestTooLargeError) Error() string {
	return fmt.Sprintf("request body is %d bytes, over the configured max_request_bytes of %d; reduce attachments or compact the session, or raise max_request_bytes if the endpoint accepts more", e.Size, e.Limit)
}

// ErrTruncatedStream is returned when a response stream ends before its terminal event.
var ErrTruncatedStream = errors.New("model stream ended before the response was complete")

// RetryableStatus reports whether an HTTP status is worth sending again: 408, 409, 429 and
// every 5xx (including Anthropic's 529). 400, 401, 413 and the rest fail the same way however
// often they are sent.
func RetryableStatus(status int) bool {
	return status == 408 || status == 409 || status == 429 || status >= 500
}

// StreamError is the error an error event of a response stream carries, read from the
// event's data: the provider's type and message, or the data itself, clipped to 300 bytes,
// where it names none.
func StreamError(data string) *ProviderError {
	pe := &ProviderError{MidStream: true, Code: ErrorCode([]byte(data))}
	pe.Type, pe.Message = ErrorBody([]byte(data))
	if pe.Message == "" {
		pe.Message = data
		if len(data) > 300 {
			n := 300
			for n > 0 && !utf8.RuneStart(data[n]) {
				n--
			}
			pe.Message = data[:n] + "…"
		}
	}
	pe.Retryable = RetryableType(pe.Type)
	return pe
}

// RetryableType reports whether a provider error type names a transient condition.
func RetryableType(t string) bool {
	switch t {
	case "overloaded_error", "api_error", "rate_limit_error", "server_error", "rate_limit_exceeded", "timeout_error":
		return true
	}
	return false
}

// ResponseTooLargeError is a response stream that went past a size cap: the whole response
// past [Client.MaxResponseBytes], or one event past [Client.MaxEventBytes]. The response is
// discarded (none of its tool calls run) and it is not retried: the same request would
// likely stream the same way again.
type ResponseTooLargeError struct {
	Limit  int64
	Event  bool  // one event went past the event cap; otherwise the whole response did
	Offset int64 // for Event, the byte offset where that event started
}

func (e *ResponseTooLargeError) Error() string {
	if e.Event {
		return fmt.Sprintf("model stream: one event (starting at byte %d) is over the cap of %d bytes per event; the response was discarded and none of its tool calls ran", e.Offset, e.Limit)
	}
	return fmt.Sprintf("model response is over the cap of %d bytes per response; the response was discarded and none of its tool calls ran", e.Limit)
}

// TimeoutError is a model endpoint that stayed silent for longer than one of the client's
// timeouts: no response headers within [Client.HeaderTimeout], or no byte of the streamed
// body within [Client.IdleTimeout]. One that happens before any of the response streamed is
// retried like a connection error; one mid-stream fails the step.
type TimeoutError struct {
	Header bool // waiting for the response headers; otherwise the stream went idle
	Limit  time.Duration
}

func (e *TimeoutError) Error() string {
	if e.Header {
		return fmt.Sprintf("model endpoint sent no response headers within %s; if it is this slow to start answering, raise response_header_timeout_secs in the config of its gateway or model", e.Limit)
	}
	return fmt.Sprintf("model stream was silent for %s; if the model pauses that long (for example while it thinks without streaming), raise stream_idle_timeout_secs in the config of its gateway or model", e.Limit)
}

// Timeout reports true, as a net.Error does.
func (e *TimeoutError) Timeout() bool { return true }

// EventError is an event of a response stream that could not be decoded: data that is not
// JSON (and not a keep-alive, see [KeepAlive]), or JSON that does not fit the event's
// shape. The response is discarded and none of its tool calls run: skipping one event can
// change what a tool call does, for example by dropping a fragment of its arguments.
type EventError struct {
	Protocol string
	Type     string // the event's type, or "" when it could not be told
	N        int    // the event's number in the stream, from 1
	Offset   int64  // the byte offset of its first line
	Err      error
}

// BadEvent returns the *EventError of ev for protocol; typ is its type when known.
func BadEvent(protocol string, ev Event, typ string, err error) *EventError {
	return &EventError{Protocol: protocol, Type: typ, N: ev.N, Offset: ev.Offset, Err: err}
}

func (e *EventError) Error() string {
	typ := e.Type
	if typ == "" {
		typ = "of unknown type"
	}
	return fmt.Sprintf("%s stream: event %d (%s) at byte %d cannot be decoded: %s; the response was discarded and none of its tool calls ran", e.Protocol, e.N, typ, e.Offset, e.Err)
}

func (e *EventError) Unwrap() error { return e.Err }
