package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy is a gateway's tolerance for transient failures.
type RetryPolicy struct {
	MaxAttempts    int // total tries, counting the first; 1 disables retry
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	Multiplier     float64
}

// DefaultRetry is the policy of a gateway that configures none.
var DefaultRetry = RetryPolicy{MaxAttempts: 3, InitialBackoff: 500 * time.Millisecond, MaxBackoff: 30 * time.Second, Multiplier: 2}

// Backoff returns the wait before retry number n (n = 1 for the first retry), ignoring any
// Retry-After the provider sent.
func (p RetryPolicy) Backoff(n int) time.Duration {
	d := float64(p.InitialBackoff)
	for i := 1; i < n; i++ {
		d *= p.Multiplier
		if d > float64(p.MaxBackoff) {
			break
		}
	}
	return min(time.Duration(d), p.MaxBackoff)
}

// Delay returns the wait before retry n after err: the backoff, or the provider's
// Retry-After when that asks for longer, never more than MaxBackoff.
func (p RetryPolicy) Delay(n int, err error) time.Duration {
	d := p.Backoff(n)
	var pe *ProviderError
	if errors.As(err, &pe) && pe.RetryAfter > d {
		d = pe.RetryAfter
	}
	return min(d, p.MaxBackoff)
}

// Client sends requests of one protocol to one endpoint. It is safe for concurrent use.
type Client struct {
	Protocol Protocol
	BaseURL  string
	// Key returns the credential, or "" for none. It is called for every request, so a
	// credential that cannot be looked up fails the request that needs it, not startup.
	Key             func() (string, error)
	HTTP            *http.Client // nil means http.DefaultClient
	MaxRequestBytes int          // 0 means no cap
	Retry           RetryPolicy
}

// Stream sends req and yields the response's chunks, ending with [Done]. The body is
// serialized once and measured against MaxRequestBytes before anything is sent. Failures
// before any of the response streamed are retried under the retry policy, each announced
// by a [Notice]; a failure after that is returned as is. Cancelling ctx stops the request
// and any retry wait.
func (c *Client) Stream(ctx context.Context, req Request) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		body, err := c.Protocol.Encode(req)
		if err != nil {
			yield(nil, fmt.Errorf("encode %s request: %w", c.Protocol.Name(), err))
			return
		}
		if c.MaxRequestBytes > 0 && len(body) > c.MaxRequestBytes {
			yield(nil, &RequestTooLargeError{Size: len(body), Limit: c.MaxRequestBytes})
			return
		}
		policy := c.Retry
		if policy.MaxAttempts < 1 {
			policy.MaxAttempts = 1
		}
		for attempt := 1; ; attempt++ {
			streamed := false
			stopped := false
			err := c.attempt(ctx, body, func(ch Chunk) bool {
				streamed = true
				if !yield(ch, nil) {
					stopped = true
					return false
				}
				return true
			})
			if err == nil || stopped {
				return
			}
			if ctx.Err() != nil {
				yield(nil, context.Cause(ctx))
				return
			}
			if streamed || !retryable(err) || attempt >= policy.MaxAttempts {
				yield(nil, err)
				return
			}
			delay := policy.Delay(attempt, err)
			notice := Notice{
				Text:    fmt.Sprintf("%v; retrying in %s (attempt %d of %d)", err, delay.Round(time.Millisecond), attempt+1, policy.MaxAttempts),
				Attempt: attempt, Delay: delay, Err: err,
			}
			if !yield(notice, nil) {
				return
			}
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				yield(nil, context.Cause(ctx))
				return
			case <-t.C:
			}
		}
	}
}

// retryable reports whether a failure before anything streamed is worth another attempt:
// a retryable provider error, or a stream that broke before its first chunk (the
// connection dropped; nothing of the response was seen, so nothing can be duplicated).
func retryable(err error) bool {
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe.Retryable && !pe.MidStream
	}
	return errors.Is(err, ErrTruncatedStream)
}

// attempt makes one HTTP request and decodes its stream.
func (c *Client) attempt(ctx context.Context, body []byte, yield func(Chunk) bool) error {
	key := ""
	if c.Key != nil {
		k, err := c.Key()
		if err != nil {
			return err
		}
		key = k
	}
	url := strings.TrimSuffix(c.BaseURL, "/") + c.Protocol.Path()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build request to %s: %w", url, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	c.Protocol.Header(hreq.Header, key)
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return &ProviderError{Message: "POST " + url, Retryable: true, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return statusError(resp)
	}
	err = c.Protocol.Decode(resp.Body, yield)
	if err != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// statusError reads an HTTP error response into a ProviderError.
func statusError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	pe := &ProviderError{Status: resp.StatusCode, Retryable: RetryableStatus(resp.StatusCode)}
	pe.Type, pe.Message = ErrorBody(raw)
	if pe.Message == "" {
		pe.Message = strings.TrimSpace(string(raw))
		if len(pe.Message) > 300 {
			pe.Message = pe.Message[:300] + "…"
		}
	}
	switch resp.Header.Get("x-should-retry") {
	case "true":
		pe.Retryable = true
	case "false":
		pe.Retryable = false
	}
	pe.RetryAfter = RetryAfter(resp.Header, time.Now())
	return pe
}

// ErrorBody extracts the type and message of a provider error body. It understands the
// shapes the three protocols use: {"error":{"type","code","message"}} (nested) and
// {"type","code","message"} (flat).
func ErrorBody(raw []byte) (typ, msg string) {
	var v struct {
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return "", ""
	}
	if len(v.Error) > 0 && v.Error[0] == '{' {
		var inner struct {
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
		}
		if json.Unmarshal(v.Error, &inner) == nil {
			t := inner.Type
			if t == "" {
				t = codeString(inner.Code)
			}
			return t, inner.Message
		}
	}
	if len(v.Error) > 0 && v.Error[0] == '"' {
		var s string
		_ = json.Unmarshal(v.Error, &s)
		return v.Type, s
	}
	t := v.Type
	if t == "" || t == "error" {
		if c := codeString(v.Code); c != "" {
			t = c
		}
	}
	return t, v.Message
}

func codeString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// RetryAfter reads retry-after-ms (milliseconds) or retry-after (seconds, or an HTTP date)
// from h. It returns 0 when neither is present or parseable.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("retry-after")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
