package profiles

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"myco.dev/internal/handoff"
	"myco.dev/internal/web"
	"myco.dev/static"
)

type noHandoffs struct{}

func (noHandoffs) Sender(context.Context, string) (*handoff.Sender, error) {
	return nil, errors.New("no workers here")
}

// TestSplitListenerClosed: once closed, the supervisor's listener fails every Accept with
// net.ErrClosed, whether Close or its accepting goroutine ended it first; a nil connection
// with a nil error made http.Server serve nil, a panic at shutdown that a test caught.
func TestSplitListenerClosed(t *testing.T) {
	sv := NewSupervisor(SupervisorOptions{Port: "1", UID: os.Getuid(), Exists: func(string) bool { return false }})
	for range 200 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l := sv.Listener(ln, noHandoffs{})
		l.Close()
		c, err := l.Accept()
		if c != nil || !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close = %v, %v; want no connection and net.ErrClosed", c, err)
		}
	}
}

// flakyListener fails its first Accept with EMFILE (out of file descriptors), then
// accepts as the listener it wraps does.
type flakyListener struct {
	net.Listener
	calls int
}

func (f *flakyListener) Accept() (net.Conn, error) {
	if f.calls++; f.calls == 1 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return f.Listener.Accept()
}

// TestSplitListenerRetriesTemporaryErrors: running out of file descriptors once does not
// end the port's service: the next connection is accepted.
func TestSplitListenerRetriesTemporaryErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sv := NewSupervisor(SupervisorOptions{Port: "1", UID: os.Getuid(), Exists: func(string) bool { return false }})
	l := sv.Listener(&flakyListener{Listener: ln}, noHandoffs{})
	defer l.Close()
	dialed, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	io.WriteString(dialed, "GET /status HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n") // the supervisor's own: kept
	c, err := l.Accept()
	if err != nil || c == nil {
		t.Fatalf("Accept = %v, %v; want the connection after the temporary error", c, err)
	}
	c.Close()
}

// TestListenerHandsConnections: a connection whose first request is for a profile goes to
// its worker whole (the worker sees the browser's own TCP connection, where a forwarded
// request comes over a socket pair); the supervisor keeps the rest and serves them itself.
func TestListenerHandsConnections(t *testing.T) {
	fw := newFakeWorkers(t, http.HandlerFunc(fakeWorker))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := web.PortOf(ln.Addr())
	sv := NewSupervisor(SupervisorOptions{Workers: fw, Default: "work", Assets: static.New("/static/"), Port: port, UID: os.Getuid(),
		Log: slog.New(slog.NewTextHandler(t.Output(), nil))})
	srv := web.NewServer(sv, slog.New(slog.NewTextHandler(t.Output(), nil)))
	go srv.Serve(sv.Listener(ln, fw))
	t.Cleanup(func() { srv.Close() })
	get := func(path string) string {
		t.Helper()
		// A connection of its own each: the first request decides where a connection goes.
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
		resp, err := client.Get("http://127.0.0.1:" + port + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s = %d %q", path, resp.StatusCode, b)
		}
		return string(b)
	}
	if body := get("/profiles/work/s/1/"); !strings.HasPrefix(body, "worker: GET /profiles/work/s/1/") || !strings.Contains(body, "remote=127.0.0.1:") {
		t.Errorf("a profile's page = %q, want its worker serving the browser's connection", body)
	}
	if body := get("/status"); !strings.Contains(body, `"event_streams": 0`) {
		t.Errorf("/status = %q, want the supervisor's own answer", body)
	}
}

// TestWorkerLostAnswer: the answer the supervisor gives on a handed-off connection whose
// worker died before answering: 502 worker_failed, a page for a page, the API's envelope
// under /api/, no body for HEAD, and the connection closed.
func TestWorkerLostAnswer(t *testing.T) {
	sv := NewSupervisor(SupervisorOptions{Default: "work", Assets: static.New("/static/"), Port: "1", UID: os.Getuid(),
		Log: slog.New(slog.NewTextHandler(t.Output(), nil))})
	for _, tt := range []struct {
		label, want string
	}{
		{"GET /profiles/work/s/1/", "stopped while answering this request"},
		{"POST /profiles/work/api/sessions/1/actions", `"code": "worker_failed"`},
		{"HEAD /profiles/work/", ""},
	} {
		t.Run(tt.label, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			client, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			server, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				sv.s.workerLost(server, "work", tt.label)
				server.Close()
			}()
			client.SetDeadline(time.Now().Add(10 * time.Second))
			method, _, _ := strings.Cut(tt.label, " ")
			resp, err := http.ReadResponse(bufio.NewReader(client), &http.Request{Method: method})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadGateway || !resp.Close || !strings.Contains(string(body), tt.want) || tt.want == "" && len(body) != 0 {
				t.Errorf("the answer = %d (close %v) %q; want 502 with %q, the connection closed", resp.StatusCode, resp.Close, body, tt.want)
			}
			if rest, err := io.ReadAll(client); err != nil || len(rest) != 0 {
				t.Errorf("after the answer: %q, %v; want the connection closed", rest, err)
			}
		})
	}
}
