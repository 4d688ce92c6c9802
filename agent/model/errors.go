package model

import (
	"errors"
	"fmt"
	"time"
)

// ProviderError is a failure reported by the model endpoint: an HTTP error status, or an
// error event inside an already-started stream (MidStream).
type ProviderError struct {
	Status     int    // HTTP status; 0 for a transport failure or a mid-stream error without one
	Type       string // provider error type or code, e.g. "rate_limit_error"
	Message    string
	Retryable  bool
	RetryAfter time.Duration // what the provider asked for; 0 when it did not say
	MidStream  bool
	Err        error // the transport error, when there was no response
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

// RetryableType reports whether a provider error type names a transient condition.
func RetryableType(t string) bool {
	switch t {
	case "overloaded_error", "api_error", "rate_limit_error", "server_error", "rate_limit_exceeded", "timeout_error":
		return true
	}
	return false
}
