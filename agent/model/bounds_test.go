package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// counted answers every request with h and counts them.
func counted(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	for _, status := range []int{301, 302, 303, 307, 308} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			elsewhere, stolen := counted(t, func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "data: stolen\n\n")
			})
			loc := strings.Replace(elsewhere.URL, "http://", "http://mallory:S3CRET@", 1) + "/collect?token=T0KEN#frag"
			srv, n := counted(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, loc, status)
			})
			// A caller's client that would follow redirects (nil CheckRedirect) must not.
			c := &Client{Protocol: lineProtocol{}, BaseURL: srv.URL, HTTP: &http.Client{}, Retry: fastRetry(3),
				Key: func() (string, error) { return "sk-secret", nil }}
			text, notices, err := collect(c, t.Context(), Request{System: "the conversation"})
			if stolen.Load() != 0 {
				t.Fatalf("the redirect target got %d requests, want 0", stolen.Load())
			}
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Status != status || pe.Retryable {
				t.Fatalf("err = %v, want a non-retryable ProviderError with status %d", err, status)
			}
			if n.Load() != 1 || len(notices) != 0 || text != "" {
				t.Errorf("requests %d, notices %d, text %q; want 1, 0, \"\"", n.Load(), len(notices), text)
			}
			msg := err.Error()
			if want := elsewhere.URL + "/collect"; !strings.Contains(msg, want) {
				t.Errorf("error %q does not name the Location %s", msg, want)
			}
			for _, secret := range []string{"mallory", "S3CRET", "T0KEN", "frag"} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q shows %q from the Location", msg, secret)
				}
			}
		})
	}
}

func TestClientRequestURL(t *testing.T) {
	var got atomic.Pointer[http.Request]
	srv, _ := counted(t, func(w http.ResponseWriter, r *http.Request) {
		got.Store(r)
		io.WriteString(w, "data: ok\n\n")
	})
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, tt := range []struct {
		base, path, query string
	}{
		{"http://" + host, "/line", ""},
		{"http://" + host + "/", "/line", ""},
		{"http://" + host + "/v1", "/v1/line", ""},
		{"http://" + host + "/v1/", "/v1/line", ""},
		{"http://" + host + "/v1?api-version=2024-10-21", "/v1/line", "api-version=2024-10-21"},
		{"http://" + host + "/v1/?x=1&y=2#frag", "/v1/line", "x=1&y=2"},
	} {
		c := &Client{Protocol: lineProtocol{}, BaseURL: tt.base, Retry: fastRetry(1)}
		if _, _, err := collect(c, t.Context(), Request{}); err != nil {
			t.Fatalf("base_url %s: %v", tt.base, err)
		}
		r := got.Load()
		if r.URL.Path != tt.path || r.URL.RawQuery != tt.query {
			t.Errorf("base_url %s: request went to path %q query %q, want %q %q", tt.base, r.URL.Path, r.URL.RawQuery, tt.path, tt.query)
		}
	}
}

func TestClientErrorsRedactBaseURL(t *testing.T) {
	srv, _ := counted(t, func(http.ResponseWriter, *http.Request) {})
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close() // nothing listens there any more
	for _, tt := range []struct {
		name, base, want string
	}{
		{"connection refused", "http://user:PASSW0RD@" + host + "/v1?key=QU3RY", "http://" + host + "/v1/line"},
		{"invalid base_url", "http://user:PASSW0RD@" + host + ":99999x/v1?key=QU3RY", "base_url is not a valid URL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &Client{Protocol: lineProtocol{}, BaseURL: tt.base, Retry: fastRetry(2)}
			_, notices, err := collect(c, t.Context(), Request{})
			if err == nil {
				t.Fatal("Stream succeeded, want an error")
			}
			texts := []string{err.Error()}
			for _, n := range notices {
				texts = append(texts, n.Text)
			}
			for _, s := range texts {
				if !strings.Contains(s, tt.want) {
					t.Errorf("message %q does not contain %q", s, tt.want)
				}
				for _, secret := range []string{"user", "PASSW0RD", "QU3RY"} {
					if strings.Contains(s, secret) {
						t.Errorf("message %q shows %q from base_url", s, secret)
					}
				}
			}
			var ue *url.Error
			if errors.As(err, &ue) && strings.Contains(ue.URL, "PASSW0RD") {
				t.Errorf("the *url.Error in the chain keeps the password: %q", ue.URL)
			}
		})
	}
}

func TestClientCredentialsInBaseURLStillSent(t *testing.T) {
	var user, pass string
	srv, _ := counted(t, func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ = r.BasicAuth()
		io.WriteString(w, "data: ok\n\n")
	})
	c := &Client{Protocol: lineProtocol{}, BaseURL: strings.Replace(srv.URL, "http://", "http://gw:pw@", 1), Retry: fastRetry(1)}
	if _, _, err := collect(c, t.Context(), Request{}); err != nil {
		t.Fatal(err)
	}
	if user != "gw" || pass != "pw" {
		t.Errorf("basic auth = %q:%q, want gw:pw (userinfo in base_url is for the gateway)", user, pass)
	}
}

// silent answers nothing until the client leaves; with headers set, it sends the headers
// and body first.
func silent(headers bool, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server notices when the client leaves
		if headers {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			io.WriteString(w, body)
			http.NewResponseController(w).Flush()
		}
		<-r.Context().Done()
	}
}

func TestClientTimeouts(t *testing.T) {
	const short = 200 * time.Millisecond
	for _, tt := range []struct {
		name        string
		h           http.HandlerFunc
		c           Client
		header      bool
		wantText    string
		wantTries   int32
		wantSetting string
	}{
		{"no headers: retried", silent(false, ""), Client{HeaderTimeout: short}, true, "", 2, "response_header_timeout_secs"},
		{"silent before the first event: retried", silent(true, ""), Client{IdleTimeout: short}, false, "", 2, "stream_idle_timeout_secs"},
		{"silent mid-event: retried", silent(true, "data: par"), Client{IdleTimeout: short}, false, "", 2, "stream_idle_timeout_secs"},
		{"silent after output: not retried", silent(true, "data: hello\n\n"), Client{IdleTimeout: short}, false, "hello", 1, "stream_idle_timeout_secs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, n := counted(t, tt.h)
			c := tt.c
			c.Protocol, c.BaseURL, c.Retry = lineProtocol{}, srv.URL, fastRetry(2)
			text, notices, err := collect(&c, t.Context(), Request{})
			var te *TimeoutError
			if !errors.As(err, &te) || te.Header != tt.header || te.Limit != short {
				t.Fatalf("err = %v, want a TimeoutError (header %v, limit %s)", err, tt.header, short)
			}
			if !strings.Contains(err.Error(), tt.wantSetting) {
				t.Errorf("error %q does not say how to raise the timeout (%s)", err, tt.wantSetting)
			}
			if text != tt.wantText || n.Load() != tt.wantTries || len(notices) != int(tt.wantTries)-1 {
				t.Errorf("text %q, requests %d, notices %d; want %q, %d, %d", text, n.Load(), len(notices), tt.wantText, tt.wantTries, tt.wantTries-1)
			}
		})
	}
}

// pipeTransport serves every request with a body that script writes to; it stands in for
// the network inside a synctest bubble. Reads of the body end when the request is
// cancelled, as they do with net/http.
type pipeTransport struct {
	script func(w io.Writer)
}

func (p pipeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	go func() {
		p.script(pw)
		pw.Close()
	}()
	go func() {
		<-r.Context().Done()
		pr.CloseWithError(r.Context().Err())
	}()
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: pr, Request: r}, nil
}

func TestIdleTimeoutCountsOnlySilence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Ten events a second apart: the stream lasts ten idle timeouts, but no silence
		// between bytes is longer than half of one.
		tr := pipeTransport{script: func(w io.Writer) {
			for i := range 10 {
				time.Sleep(time.Second)
				fmt.Fprintf(w, "data: %d\n\n", i)
			}
		}}
		c := &Client{Protocol: lineProtocol{}, BaseURL: "http://model.test", HTTP: &http.Client{Transport: tr},
			IdleTimeout: 2 * time.Second, HeaderTimeout: 2 * time.Second, Retry: fastRetry(1)}
		text, _, err := collect(c, t.Context(), Request{})
		if err != nil || text != "0123456789" {
			t.Fatalf("Stream = %q, %v; want all ten events", text, err)
		}

		// Time the consumer spends between chunks is not silence of the endpoint.
		tr.script = func(w io.Writer) { io.WriteString(w, "data: a\n\ndata: b\n\n") }
		c.HTTP = &http.Client{Transport: tr}
		text = ""
		for ch, err := range c.Stream(t.Context(), Request{}) {
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if d, ok := ch.(TextDelta); ok {
				text += d.Text
				time.Sleep(5 * time.Second)
			}
		}
		if text != "ab" {
			t.Errorf("text = %q, want ab", text)
		}
	})
}

func TestClientCancelDuringTimeoutWait(t *testing.T) {
	srv, _ := counted(t, silent(true, "data: x\n\n"))
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	stopped := errors.New("stopped by user")
	c := &Client{Protocol: lineProtocol{}, BaseURL: srv.URL, IdleTimeout: time.Hour, Retry: fastRetry(1)}
	var err error
	for ch, e := range c.Stream(ctx, Request{}) {
		if _, ok := ch.(TextDelta); ok {
			cancel(stopped)
		}
		if e != nil {
			err = e
		}
	}
	if !errors.Is(err, stopped) {
		t.Fatalf("err = %v, want the cancel cause", err)
	}
}

// endless serves unit again and again, after head, until the client leaves (or 256 MiB, a
// backstop should the client never stop reading).
func endless(head, unit string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, head)
		chunk := strings.Repeat(unit, max(1, 32<<10/len(unit)))
		for sent := 0; sent < 256<<20; sent += len(chunk) {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}
}

func TestClientSizeCaps(t *testing.T) {
	for _, tt := range []struct {
		name  string
		h     http.HandlerFunc
		c     Client
		event bool
		limit int64
	}{
		{"endless events", endless("", "data: "+strings.Repeat("x", 1000)+"\n\n"), Client{MaxResponseBytes: 1 << 20}, false, 1 << 20},
		{"endless data lines", endless("", "data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"), Client{MaxEventBytes: 64 << 10}, true, 64 << 10},
		{"one endless line", endless("data: ", "x"), Client{MaxEventBytes: 64 << 10}, true, 64 << 10},
		{"default from MaxOutputTokens", endless("", "data: "+strings.Repeat("x", 1000)+"\n\n"), Client{}, false, int64(ResponseCap(100))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, n := counted(t, tt.h)
			c := tt.c
			c.Protocol, c.BaseURL, c.Retry = lineProtocol{}, srv.URL, fastRetry(3)
			_, _, err := collect(&c, t.Context(), Request{MaxOutputTokens: 100})
			var tl *ResponseTooLargeError
			if !errors.As(err, &tl) || tl.Event != tt.event || tl.Limit != tt.limit {
				t.Fatalf("err = %v, want a ResponseTooLargeError (event %v, limit %d)", err, tt.event, tt.limit)
			}
			if !strings.Contains(err.Error(), fmt.Sprint(tt.limit)) {
				t.Errorf("error %q does not name the cap", err)
			}
			if n.Load() != 1 {
				t.Errorf("requests = %d, want 1: a response over a cap is not retried", n.Load())
			}
		})
	}
}

func TestResponseCap(t *testing.T) {
	for _, tt := range []struct{ tokens, want int }{
		{0, DefaultMaxResponseBytes},
		{-1, DefaultMaxResponseBytes},
		{8192, 4<<20 + 8192<<10},
		{128000, 4<<20 + 128000<<10},
		{1 << 30, 4<<20 + 1<<29},
	} {
		if got := ResponseCap(tt.tokens); got != tt.want {
			t.Errorf("ResponseCap(%d) = %d, want %d", tt.tokens, got, tt.want)
		}
	}
}

// uploadTransport reads the request body a KiB a second, up to stallAfter KiB (then it
// waits for the request to end), and answers with one event.
type uploadTransport struct{ stallAfter int }

func (u uploadTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	buf := make([]byte, 1<<10)
	for n := 0; ; n++ {
		if n == u.stallAfter {
			<-r.Context().Done()
			return nil, r.Context().Err()
		}
		time.Sleep(time.Second)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			break
		}
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("data: ok\n\n")), Request: r}, nil
}

func TestHeaderTimeoutCountsFromUploadProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		req := Request{System: strings.Repeat("x", 10<<10)} // ten seconds to upload
		c := &Client{Protocol: lineProtocol{}, BaseURL: "http://model.test", HTTP: &http.Client{Transport: uploadTransport{stallAfter: -1}},
			HeaderTimeout: 2 * time.Second, Retry: fastRetry(1)}
		if text, _, err := collect(c, t.Context(), req); err != nil || text != "ok" {
			t.Fatalf("slow but steady upload: Stream = %q, %v; want ok", text, err)
		}

		c.HTTP = &http.Client{Transport: uploadTransport{stallAfter: 3}}
		start := time.Now()
		_, _, err := collect(c, t.Context(), req)
		var te *TimeoutError
		if !errors.As(err, &te) || !te.Header {
			t.Fatalf("stalled upload: err = %v, want a header TimeoutError", err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("stalled upload failed after %s, want 5s (3 KiB sent, then 2s of stall)", d)
		}
	})
}
