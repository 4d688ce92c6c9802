package model

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWarm (issue 20): Warm opens the connection (and does the TLS handshake) before the
// request, which then takes it: one connection in all, made before the request was sent.
// Right after a request Warm opens none (the pool has one).
func TestWarm(t *testing.T) {
	for _, tls := range []bool{false, true} {
		name := "http"
		if tls {
			name = "https"
		}
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex // guards opened and arrived
			var opened, arrived []time.Time
			conns := make(chan struct{}, 8) // a connection was opened
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				arrived = append(arrived, time.Now())
				mu.Unlock()
				io.WriteString(w, "data: hi\n\n")
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					mu.Lock()
					opened = append(opened, time.Now())
					mu.Unlock()
					conns <- struct{}{}
				}
			}
			var client *http.Client
			if tls {
				srv.StartTLS()
				client = &http.Client{Transport: srv.Client().Transport.(*http.Transport).Clone()}
			} else {
				srv.Start()
				client = &http.Client{Transport: http.DefaultTransport}
			}
			defer srv.Close()
			c := &Client{Protocol: lineProtocol{}, BaseURL: srv.URL, HTTP: client, Retry: fastRetry(1)}
			c.Warm(t.Context())
			// The server notes the connection in its accept goroutine, which may run after
			// the client's dial has returned: wait for it. That it is the only one is
			// checked at the end.
			select {
			case <-conns:
			case <-time.After(5 * time.Second):
				t.Fatal("after Warm: no connection, want 1")
			}
			if text, _, err := collect(c, t.Context(), Request{System: "x"}); err != nil || text != "hi" {
				t.Fatalf("the request after Warm = %q, %v", text, err)
			}
			c.Warm(t.Context()) // the pool has the connection: nothing to open
			if text, _, err := collect(c, t.Context(), Request{System: "x"}); err != nil || text != "hi" {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(opened) != 1 || len(arrived) != 2 || !opened[0].Before(arrived[0]) {
				t.Errorf("%d connections for %d requests; want one, opened by Warm before the first request", len(opened), len(arrived))
			}
		})
	}
}

// slowAccept holds each accepted connection for delay before the server sees it, so that a
// client's TLS handshake takes at least that long; accepted gets each connection's arrival.
type slowAccept struct {
	net.Listener
	delay    time.Duration
	accepted chan struct{}
}

func (l *slowAccept) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted <- struct{}{}
		time.Sleep(l.delay) // the handshake's wait: what a distant gateway costs
	}
	return c, err
}

// TestWarmInFlight (issue 20): a request sent while Warm is still in its TLS handshake (a
// distant gateway's, or one slower than the save it overlaps) waits for that connection
// instead of opening a second one and starting its handshake from nothing.
func TestWarmInFlight(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: hi\n\n")
	}))
	l := &slowAccept{Listener: srv.Listener, delay: 300 * time.Millisecond, accepted: make(chan struct{}, 8)}
	srv.Listener = l
	srv.StartTLS()
	defer srv.Close()
	client := &http.Client{Transport: srv.Client().Transport.(*http.Transport).Clone()}
	c := &Client{Protocol: lineProtocol{}, BaseURL: srv.URL, HTTP: client, Retry: fastRetry(1)}
	warmed := make(chan struct{})
	go func() { c.Warm(t.Context()); close(warmed) }()
	<-l.accepted // Warm's connection is in its handshake, held by the server
	select {
	case <-warmed:
		t.Fatal("Warm returned before its handshake could end")
	default:
	}
	if text, _, err := collect(c, t.Context(), Request{System: "x"}); err != nil || text != "hi" {
		t.Fatalf("the request during Warm = %q, %v", text, err)
	}
	<-warmed
	select {
	case <-l.accepted:
		t.Error("the request opened a second connection instead of waiting for Warm's")
	default:
	}
}

// TestClientKeepsConnectionsOfConcurrentRequests: ten requests streaming at once over
// HTTP/1.1, then ten more: the second round reuses the first's connections instead of
// dialling eight anew, as net/http's default of two idle connections per host made it.
func TestClientKeepsConnectionsOfConcurrentRequests(t *testing.T) {
	const n = 10
	var dialled atomic.Int32
	arrived := make(chan struct{}, n)
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "data: ok\n\n")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialled.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := &Client{Protocol: lineProtocol{}, BaseURL: srv.URL, Key: func() (string, error) { return "k", nil }, Retry: fastRetry(1)}
	round := func() {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				if text, _, err := collect(c, t.Context(), Request{System: "s"}); err != nil || text != "ok" {
					errs <- fmt.Errorf("text %q, err %v", text, err)
				}
			})
		}
		for range n {
			<-arrived // every request holds a connection at once
		}
		for range n {
			release <- struct{}{}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
	round()
	first := dialled.Load()
	round()
	if again := dialled.Load() - first; again != 0 {
		t.Errorf("the second round dialled %d connections, want 0 (the first dialled %d)", again, first)
	}
}
