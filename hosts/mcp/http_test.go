package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An HTTP server gets the configured headers with every request, and sees a call that
// timed out cancelled; a redirect is refused, so a header never goes elsewhere.
func TestHTTPHeadersAndCancel(t *testing.T) {
	cancelled := make(chan string, 1)
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake-http", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			cancelled <- context.Cause(ctx).Error()
			return nil, ctx.Err()
		})
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex // guards auths
	var auths []string
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		handler.ServeHTTP(w, r)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)

	s := newSet(t, Options{Servers: []Server{
		{Name: "h", URL: hs.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer t0ken"}, ToolTimeout: 300 * time.Millisecond},
		{Name: "moved", URL: hs.URL + "/moved", Headers: map[string]string{"Authorization": "Bearer t0ken"}},
	}})
	s.Discover(t.Context())
	wantText(t, "echo", call(t, s, "o", "mcp__h__echo", `{"x":1}`), `{"x":1}`)
	wantError(t, "block", call(t, s, "o", "mcp__h__block", `{}`), "did not answer within 300ms")
	select {
	case why := <-cancelled:
		t.Logf("the server saw: %s", why)
	case <-time.After(10 * time.Second):
		t.Error("the server did not see the call cancelled")
	}
	mu.Lock()
	for i, a := range auths {
		if a != "Bearer t0ken" {
			t.Errorf("request %d had Authorization %q, want the configured header", i, a)
		}
	}
	if len(auths) < 3 {
		t.Errorf("the server saw %d requests, want the initialization and the calls", len(auths))
	}
	mu.Unlock()

	st := s.Statuses()
	if st[1].Server != "moved" || st[1].Listed || !strings.Contains(st[1].Err, "redirect") {
		t.Errorf("the redirecting server's status = %+v, want it not listed because of the redirect", st[1])
	}
}

// New refuses what config refuses too: plain http to a host that is not loopback (unless
// allowed), both or neither of Command and URL, bad names, a name twice.
func TestNewChecks(t *testing.T) {
	for _, tt := range []struct {
		name    string
		servers []Server
		want    string
	}{
		{"plain http", []Server{{Name: "a", URL: "http://docs.example/mcp"}}, "plain http"},
		{"neither", []Server{{Name: "a"}}, "set exactly one of Command and URL"},
		{"both", []Server{{Name: "a", Command: "x", URL: "https://h"}}, "set exactly one of Command and URL"},
		{"bad name", []Server{{Name: "a.b", Command: "x"}}, "invalid server name"},
		{"twice", []Server{{Name: "a", Command: "x"}, {Name: "a", Command: "y"}}, `server "a" configured twice`},
		{"user in URL", []Server{{Name: "a", URL: "https://u:p@h/mcp"}}, "without a user"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(Options{Servers: tt.servers}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%+v) = %v, want an error containing %q", tt.servers, err, tt.want)
			}
		})
	}
	for _, ok := range []Server{
		{Name: "a", URL: "http://127.0.0.1:1/mcp"},
		{Name: "a", URL: "http://localhost:1/mcp"},
		{Name: "a", URL: "http://[::1]:1/mcp"},
		{Name: "a", URL: "http://docs.example/mcp", AllowHTTP: true},
	} {
		if _, err := New(Options{Servers: []Server{ok}}); err != nil {
			t.Errorf("New(%+v) = %v, want it accepted", ok, err)
		}
	}
}

// A server that fails discovery is tried again by a later Discover, after its backoff.
func TestDiscoverRetries(t *testing.T) {
	clk := newClock()
	srv := fake(t, t.TempDir())
	srv.Env["PATH"] = t.TempDir()
	srv.Command = "fake-mcp" // not there yet
	s := newSet(t, Options{Servers: []Server{srv}, Now: clk.Now})
	s.Discover(t.Context())
	if st := s.Statuses()[0]; st.Listed || st.Err == "" || !st.RetryAt.Equal(clk.Now().Add(time.Second)) {
		t.Fatalf("status after a failed discovery = %+v, want a retry in 1 s", st)
	}
	exe := fake(t, "").Command
	if err := os.Symlink(exe, srv.Env["PATH"]+"/fake-mcp"); err != nil {
		t.Fatal(err)
	}
	s.Discover(t.Context())
	if st := s.Statuses()[0]; st.Listed {
		t.Fatalf("Discover during the backoff listed the server: %+v", st)
	}
	clk.Add(time.Second)
	s.Discover(t.Context())
	if st := s.Statuses()[0]; !st.Listed || st.Err != "" || len(st.Tools) == 0 {
		t.Fatalf("Discover after the backoff = %+v, want the server listed", st)
	}
	wantText(t, "echo", call(t, s, "o", "mcp__fake__echo", `{"text":"back"}`), "back")
}

func TestBackoff(t *testing.T) {
	s := newSet(t, Options{})
	var got []time.Duration
	for n := 1; n <= 9; n++ {
		got = append(got, s.backoff(n))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("backoffs = %v, want 1 s doubling to 1 min", got)
		}
	}
}
