package model

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestStreamError reads an error event's type and message, and falls back to the data
// itself, clipped on a rune boundary, where the body names no message.
func TestStreamError(t *testing.T) {
	pe := StreamError(`{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`)
	if pe.Type != "overloaded_error" || pe.Message != "busy" || !pe.Retryable || !pe.MidStream {
		t.Errorf("StreamError(overloaded) = %+v", pe)
	}
	long := strings.Repeat("é", 400) // two bytes a rune: byte 300 starts one
	pe = StreamError("x" + long)     // now byte 300 is inside one
	if !utf8.ValidString(pe.Message) || !strings.HasSuffix(pe.Message, "…") || len(pe.Message) > 300+len("…") {
		t.Errorf("a long body without a message gives %d bytes %q…, want at most 300 valid bytes marked as cut", len(pe.Message), pe.Message[:20])
	}
	if pe.Retryable {
		t.Errorf("an error of no type is retryable")
	}
	if pe := StreamError("gone"); pe.Message != "gone" {
		t.Errorf("a short body gives message %q, want it whole", pe.Message)
	}
}

// TestRetryableStatus: connection-level and transient statuses are retried (409 beyond the
// specification, as docs/decisions.md says); the rest fail the same way every time.
func TestRetryableStatus(t *testing.T) {
	for status, want := range map[int]bool{408: true, 409: true, 429: true, 500: true, 502: true, 503: true, 529: true,
		400: false, 401: false, 403: false, 404: false, 413: false, 422: false} {
		if got := RetryableStatus(status); got != want {
			t.Errorf("RetryableStatus(%d) = %v, want %v", status, got, want)
		}
	}
}
