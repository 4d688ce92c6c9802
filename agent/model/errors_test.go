package model

import (
	"errors"
	"net/http"
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
// specification, as docs/dev/decisions.md says); the rest fail the same way every time.
func TestRetryableStatus(t *testing.T) {
	for status, want := range map[int]bool{408: true, 409: true, 429: true, 500: true, 502: true, 503: true, 529: true,
		400: false, 401: false, 403: false, 404: false, 413: false, 422: false} {
		if got := RetryableStatus(status); got != want {
			t.Errorf("RetryableStatus(%d) = %v, want %v", status, got, want)
		}
	}
}

// TestRejectedAndOverflow reads the error bodies real servers send when a request does not
// fit, or is invalid, and tells which refusals rewind a turn and which overflow its context.
func TestRejectedAndOverflow(t *testing.T) {
	for _, tt := range []struct {
		name             string
		status           int
		body             string
		rejected, overfl bool
	}{
		{"anthropic prompt too long", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215021 tokens > 200000 maximum"}}`, true, true},
		{"anthropic request too large", 413, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`, true, true},
		{"anthropic invalid request", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.tool_use.id: String should match pattern"}}`, true, false},
		{"openai responses context window", 400, `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`, true, true},
		{"openai completions context length", 400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, true, true},
		{"llama.cpp", 400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}`, true, true},
		{"vllm", 400, `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`, true, true},
		{"unprocessable", 422, `{"error":{"message":"invalid tool schema"}}`, true, false},
		{"unauthorized", 401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, false, false},
		{"rate limited", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, false, false},
		{"overloaded", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tt.status, Header: http.Header{}}
			err := statusError(resp, strings.NewReader(tt.body))
			var pe *ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("statusError = %v, want a *ProviderError", err)
			}
			if pe.Rejected() != tt.rejected || pe.Overflow() != tt.overfl {
				t.Errorf("%+v: Rejected %v Overflow %v, want %v %v", pe, pe.Rejected(), pe.Overflow(), tt.rejected, tt.overfl)
			}
		})
	}
	// Mid-stream: only an overflow is a rejection (a Responses response.failed, say).
	if pe := StreamError(`{"error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}}`); !pe.Rejected() || !pe.Overflow() {
		t.Errorf("mid-stream context_length_exceeded: %+v, want rejected and overflow", pe)
	}
	if pe := StreamError(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`); pe.Rejected() {
		t.Errorf("mid-stream overloaded: %+v, want not rejected", pe)
	}
}
