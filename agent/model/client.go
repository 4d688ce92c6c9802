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
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
//
// It treats the endpoint as untrusted: it never follows a redirect (the conversation and
// the credential go to BaseURL and nowhere else), it bounds how long the endpoint may stay
// silent and how much it may send, and the URLs in its errors carry no userinfo and no
// query.
type Client struct {
	Protocol Protocol
	// BaseURL is the gateway's base_url. The protocol's path is joined to its path; a query
	// in it stays the query of every request.
	BaseURL string
	// Key returns the credential, or "" for none. It is called for every request, so a
	// credential that cannot be looked up fails the request that needs it, not startup.
	Key func() (string, error)
	// HTTP sends the requests; nil means http.DefaultClient. Its CheckRedirect is not used:
	// a 3xx response is an error that names its Location, never followed.
	HTTP            *http.Client
	MaxRequestBytes int // 0 means no cap
	Retry           RetryPolicy

	// HeaderTimeout bounds the wait for the response headers: the time from sending the
	// request, or from the last progress of its upload, to the response's status line. A
	// slow upload of a large request that keeps moving does not trip it; a connection or an
	// upload that stalls, or an endpoint that takes the request and stays silent, does.
	// 0 means none. It is retried like a connection error.
	HeaderTimeout time.Duration
	// IdleTimeout bounds the silence while the response body streams: the longest the
	// client waits for its next bytes. Time the consumer spends between reads does not
	// count. 0 means none. Before any of the response has streamed it is retried like a
	// connection error; later it fails the step.
	IdleTimeout time.Duration
	// MaxResponseBytes caps the bytes of one response body (after any content decoding).
	// 0 means [ResponseCap] of the request's MaxOutputTokens.
	MaxResponseBytes int
	// MaxEventBytes caps one server-sent event, and so what is buffered while looking for
	// the end of an event. 0 means [DefaultMaxEventBytes].
	MaxEventBytes int
	// Observe, when set, is told of each attempt that sent a request, once the attempt
	// ended (a streamed response at its end, however it ended): its status, whether the
	// client tries again, its latencies and usage. It is called on the goroutine that reads
	// the stream and must return quickly; metrics are its use.
	Observe func(Attempt)

	// warm holds the *warmPool of connections opened ahead of a request (see Warm), made on
	// first use. An atomic.Value, not a struct with a lock, so that a Client that was never
	// used can be copied, as configurations are.
	warm atomic.Value
}

// Attempt is what one attempt of a request came to, as [Client.Observe] is told.
type Attempt struct {
	// Status is the response's HTTP status; 0 when none came: the connection failed, the
	// headers did not come in time, or the request was cancelled first.
	Status int
	// Retry says the client tries again after this attempt.
	Retry bool
	// Headers is the time from sending the request to its response's headers; 0 when none
	// came.
	Headers time.Duration
	// FirstChunk is the time from sending the request to the response's first chunk (text,
	// thinking or a tool call); 0 when none came.
	FirstChunk time.Duration
	// Usage is the response's, when it came to its end ([Done]); else zero.
	Usage Usage

	sent bool // the request went out: its credential was looked up and it was built
}

// DefaultMaxResponseBytes is the response cap when neither [Client.MaxResponseBytes] nor
// the request's MaxOutputTokens says otherwise.
const DefaultMaxResponseBytes = 64 << 20

// ResponseCap returns a cap on the bytes of one streamed response whose output is limited
// to maxOutputTokens tokens: 4 MiB for what does not grow with the output (the request
// fields a Responses stream echoes, usage, a few large events) plus 1 KiB per output token.
// Streams spend one event of 100 to 500 bytes per token (anthropic about 110, OpenAI chat
// chunks about 250, Azure's with content-filter results about 450), so the cap is two to
// ten times what a real response uses. maxOutputTokens <= 0 gives DefaultMaxResponseBytes;
// above 2^19 tokens the cap stops growing.
func ResponseCap(maxOutputTokens int) int {
	if maxOutputTokens <= 0 {
		return DefaultMaxResponseBytes
	}
	return 4<<20 + 1<<10*min(maxOutputTokens, 1<<19)
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
		to, err := endpoint(c.BaseURL, c.Protocol.Path())
		if err != nil {
			yield(nil, err)
			return
		}
		to.maxResponse = c.MaxResponseBytes
		if to.maxResponse <= 0 {
			to.maxResponse = ResponseCap(req.MaxOutputTokens)
		}
		policy := c.Retry
		if policy.MaxAttempts < 1 {
			policy.MaxAttempts = 1
		}
		for attempt := 1; ; attempt++ {
			streamed := false
			stopped := false
			var seen Attempt
			err := c.attempt(ctx, to, body, &seen, func(ch Chunk) bool {
				streamed = true
				if !yield(ch, nil) {
					stopped = true
					return false
				}
				return true
			})
			again := err != nil && !stopped && ctx.Err() == nil && !streamed && retryable(err) && attempt < policy.MaxAttempts
			if c.Observe != nil && seen.sent {
				seen.Retry = again
				c.Observe(seen)
			}
			if err == nil || stopped {
				return
			}
			if ctx.Err() != nil {
				yield(nil, context.Cause(ctx))
				return
			}
			if !again {
				var pe *ProviderError
				if errors.As(err, &pe) {
					pe.Attempts = attempt
				}
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
// a retryable provider error, a timeout, or a stream that broke before its first chunk (the
// connection dropped; nothing of the response was seen, so nothing can be duplicated). A
// response over a size cap is not: it would most likely stream the same way again.
func retryable(err error) bool {
	var tl *ResponseTooLargeError
	if errors.As(err, &tl) {
		return false
	}
	var te *TimeoutError
	if errors.As(err, &te) {
		return true
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe.Retryable && !pe.MidStream
	}
	return errors.Is(err, ErrTruncatedStream)
}

// target is where the requests of one Stream go and what may come back.
type target struct {
	url         *url.URL // the URL requests are sent to, userinfo and query included
	shown       string   // the URL as errors show it: no userinfo, no query
	maxResponse int
}

// endpoint joins base and path into the request URL. A query in base stays the query.
func endpoint(base, path string) (*target, error) {
	u, err := url.Parse(base)
	if err != nil {
		// The parse error quotes the whole URL, credentials included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("base_url is not a valid URL: %w", err)
	}
	if u.Path == "" {
		u.Path = "/" // JoinPath keeps an empty path relative: "responses", not "/responses"
	}
	u = u.JoinPath(path)
	u.Fragment, u.RawFragment = "", ""
	return &target{url: u, shown: redact(u)}, nil
}

// ShownURL returns the URL raw as messages may show it: without userinfo, query or
// fragment, so that credentials and signed query parameters stay out of logs, stderr and
// session files; "" for a URL that does not parse (its text could hold anything).
func ShownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return redact(u)
}

// redact returns u without userinfo, query or fragment, for error messages: credentials
// and signed query parameters stay out of logs, stderr and session files.
func redact(u *url.URL) string {
	r := *u
	r.User = nil
	r.RawQuery, r.ForceQuery = "", false
	r.Fragment, r.RawFragment = "", ""
	return r.String()
}

// noRedirect makes an http.Client return a 3xx response instead of following it.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// attempt makes one HTTP request and decodes its stream, noting in seen what came of it.
func (c *Client) attempt(ctx context.Context, to *target, body []byte, seen *Attempt, yield func(Chunk) bool) error {
	key := ""
	if c.Key != nil {
		k, err := c.Key()
		if err != nil {
			return &CredentialError{Err: err}
		}
		key = k
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hreq, err := http.NewRequestWithContext(rctx, http.MethodPost, to.shown, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build model request: %w", err)
	}
	u := *to.url // the request's own copy, with userinfo and query
	hreq.URL = &u
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	c.Protocol.Header(hreq.Header, key)
	hc := http.Client{}
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	hc.CheckRedirect = noRedirect
	hc.Transport = c.roundTripper() // which may take a connection opened ahead (Warm)
	c.pool().requested()

	var wait *headerWait
	if d := c.HeaderTimeout; d > 0 {
		wait = &headerWait{d: d}
		wait.t = time.AfterFunc(d, func() { cancel(&TimeoutError{Header: true, Limit: d}) })
		if len(body) > 0 { // an empty body stays http.NoBody, with its known length
			hreq.Body = &progressReader{r: bytes.NewReader(body), w: wait}
			hreq.GetBody = func() (io.ReadCloser, error) {
				return &progressReader{r: bytes.NewReader(body), w: wait}, nil
			}
		}
	}
	sent := time.Now()
	seen.sent = true
	resp, err := hc.Do(hreq)
	if wait != nil {
		wait.stop()
	}
	if ctx.Err() != nil {
		if err == nil {
			resp.Body.Close()
		}
		return context.Cause(ctx)
	}
	var te *TimeoutError
	if errors.As(context.Cause(rctx), &te) { // also when the headers came just too late
		if err == nil {
			resp.Body.Close()
		}
		return te
	}
	if err != nil {
		return &ProviderError{Retryable: true, Err: redactURLError(err, to.shown)}
	}
	seen.Status, seen.Headers = resp.StatusCode, time.Since(sent)
	b := &guardedBody{r: resp.Body, max: to.maxResponse, idle: c.IdleTimeout, cancel: cancel}
	defer b.Close()
	if resp.StatusCode/100 == 3 {
		return redirectError(resp, to.url)
	}
	if resp.StatusCode/100 != 2 {
		return statusError(resp, b)
	}
	err = c.Protocol.Decode(Events(b, c.MaxEventBytes), func(ch Chunk) bool {
		if seen.FirstChunk == 0 {
			seen.FirstChunk = time.Since(sent)
		}
		if d, ok := ch.(Done); ok {
			seen.Usage = d.Usage
		}
		return yield(ch)
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case b.err != nil:
		return b.err // the bound that cut the stream, not the decoder's view of the cut
	}
	var tl *ResponseTooLargeError
	if errors.As(err, &tl) {
		return tl
	}
	return err
}

// redactURLError replaces the URL in the *url.Error that http.Client.Do returns (which
// keeps the username and the query) with shown.
func redactURLError(err error, shown string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: shown, Err: ue.Err}
	}
	return err
}

// redirectError is the error for a 3xx response: not followed, never retried.
func redirectError(resp *http.Response, from *url.URL) error {
	loc := "nowhere (no Location header)"
	if l := resp.Header.Get("Location"); l != "" {
		if to, err := from.Parse(l); err == nil {
			loc = redact(to)
		} else {
			loc = "an unparsable Location"
		}
		if len(loc) > 200 {
			loc = loc[:200] + "…"
		}
	}
	return &ProviderError{Status: resp.StatusCode, Message: "redirect to " + loc + " not followed: the conversation and the credential go only to the configured base_url; if the new address is right, put it in base_url"}
}

// headerWait is the timer of HeaderTimeout. The transport's reads of the request body
// restart it (upload progress) until stop, which the client calls once Do has returned: a
// transport that still reads the body after that must not re-arm it mid-stream.
type headerWait struct {
	t *time.Timer
	d time.Duration

	mu      sync.Mutex // guards stopped
	stopped bool
}

func (w *headerWait) progress() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Reset(w.d)
	}
}

func (w *headerWait) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.t.Stop()
}

// progressReader is a request body whose every read counts as upload progress.
type progressReader struct {
	r *bytes.Reader
	w *headerWait
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.w.progress()
	return n, err
}

func (p *progressReader) Close() error { return nil }

// guardedBody is a response body under the client's bounds: it counts the bytes against
// the response cap, and a timer that runs only while a read waits fails the read after
// the idle timeout. Once a bound is hit, err keeps it and every later read returns it.
type guardedBody struct {
	r      io.ReadCloser
	n, max int
	idle   time.Duration
	timer  *time.Timer
	cancel context.CancelCauseFunc // cancels the request, which unblocks a waiting read
	err    error
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.idle > 0 {
		if b.timer == nil {
			b.timer = time.AfterFunc(b.idle, func() { b.cancel(errIdle) })
		} else {
			b.timer.Reset(b.idle)
		}
	}
	n, err := b.r.Read(p)
	if b.timer != nil && !b.timer.Stop() {
		b.err = &TimeoutError{Limit: b.idle}
		return 0, b.err
	}
	b.n += n
	if b.n > b.max {
		b.err = &ResponseTooLargeError{Limit: int64(b.max)}
		return 0, b.err
	}
	return n, err
}

func (b *guardedBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	return b.r.Close()
}

// errIdle is the cause the idle timer cancels a request with.
var errIdle = errors.New("model stream idle timeout")

// statusError reads an HTTP error response into a ProviderError.
func statusError(resp *http.Response, body io.Reader) error {
	raw, _ := io.ReadAll(io.LimitReader(body, 64<<10))
	pe := &ProviderError{Status: resp.StatusCode, Retryable: RetryableStatus(resp.StatusCode)}
	pe.Type, pe.Message = ErrorBody(raw)
	pe.Code = ErrorCode(raw)
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

// ErrorCode extracts the code of a provider error body, nested ({"error":{"code"}}) or
// flat ({"code"}); a numeric code (llama.cpp sends the status) is not one.
func ErrorCode(raw []byte) string {
	var v struct {
		Code  json.RawMessage `json:"code"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	if len(v.Error) > 0 && v.Error[0] == '{' {
		var inner struct {
			Code json.RawMessage `json:"code"`
		}
		if json.Unmarshal(v.Error, &inner) == nil {
			return codeString(inner.Code)
		}
	}
	return codeString(v.Code)
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
