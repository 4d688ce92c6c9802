package handlers

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/web"
	"myco.dev/sessions"
	"myco.dev/sessions/sessionstest"
	"myco.dev/static"
	"myco.dev/workspace"
)

// testTools is a tool host with one tool, "work", whose calls run f.
type testTools struct {
	f func(ctx context.Context, call model.ToolCall) model.ToolResult
}

func (t testTools) Tools(string, string) sessions.Tools { return t }
func (t testTools) Release(string)                      {}
func (t testTools) Specs() []model.ToolSpec {
	return []model.ToolSpec{{Name: "work", Schema: []byte(`{"type":"object"}`)}}
}
func (t testTools) Call(ctx context.Context, c model.ToolCall) model.ToolResult {
	if t.f != nil {
		return t.f(ctx, c)
	}
	return model.ToolResult{CallID: c.ID, Text: "worked"}
}

// testServer is a real session service over a fake model behind the real router, on
// 127.0.0.1.
type testServer struct {
	*httptest.Server
	mgr    *sessions.Manager
	fake   *fakemodel.Server
	ws     string // the workspace directory
	dir    string // the server's directory
	base   string // the profile's URL, with a trailing slash
	host   string // 127.0.0.1:PORT
	tools  *testTools
	client *model.Client
}

// retry lets the model client try n times, honouring Retry-After up to a minute.
func (ts *testServer) retry(t *testing.T, n int) {
	ts.client.Retry = model.RetryPolicy{MaxAttempts: n, InitialBackoff: time.Millisecond, MaxBackoff: time.Minute, Multiplier: 2}
}

func newTestServer(t testing.TB, turns ...fakemodel.Turn) *testServer {
	t.Helper()
	return newTestServerOpts(t, 0, nil, turns...)
}

// newTestServerIdle is newTestServer whose service keeps idleKeep idle sessions open (0
// for its default).
func newTestServerIdle(t testing.TB, idleKeep int, turns ...fakemodel.Turn) *testServer {
	t.Helper()
	return newTestServerOpts(t, idleKeep, nil, turns...)
}

// newTestServerWith is newTestServer whose deps with changes before the router is built.
func newTestServerWith(t testing.TB, with func(*Deps), turns ...fakemodel.Turn) *testServer {
	t.Helper()
	return newTestServerOpts(t, 0, with, turns...)
}

// newTestServerOpts is newTestServer with both: idleKeep idle sessions kept open, and with
// changing the deps.
func newTestServerOpts(t testing.TB, idleKeep int, with func(*Deps), turns ...fakemodel.Turn) *testServer {
	t.Helper()
	fake := fakemodel.New(t, turns...)
	client := sessionstest.Client(fake.URL)
	tt := &testTools{}
	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	mgr := sessionstest.Manager(t, sessions.ManagerOptions{Tools: tt, Log: log, Dir: dir, IdleKeep: idleKeep,
		Models: sessionstest.NewModels(client, "fake", "other")})
	files, err := workspace.OpenFiles(ws)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.ConnContext = web.ConnContext
	u, _ := url.Parse("http://" + srv.Listener.Addr().String())
	d := Deps{Profile: "default", Sessions: mgr, Default: "fake",
		Models:    []ModelInfo{{Key: "fake", Protocol: "anthropic-messages", ContextWindow: 100000, MaxImageBase64Bytes: 1 << 20}, {Key: "other", Protocol: "openai-responses", ContextWindow: 1000}},
		Workspace: files, WorkspaceDir: ws, Dir: dir, Assets: static.New("/static/"),
		Port: u.Port(), UID: os.Getuid(), Ping: 200 * time.Millisecond, Log: log}
	if with != nil {
		with(&d)
	}
	srv.Config.Handler = checkAPI(t, New(d))
	srv.Start()
	t.Cleanup(srv.Close)
	return &testServer{Server: srv, mgr: mgr, fake: fake, ws: ws, dir: dir, base: srv.URL + "/profiles/default/", host: u.Host, tools: tt, client: client}
}

// do sends a request with the given method, path (relative to the server), headers and
// form body, and returns the response and its body.
func (ts *testServer) do(t *testing.T, method, path string, header http.Header, form url.Values) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, ts.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 20 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// session creates a session through the service and returns its path.
func (ts *testServer) session(t *testing.T) (id, path string) {
	t.Helper()
	id, err := ts.mgr.Create(t.Context(), sessions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return id, "/profiles/default/s/" + id + "/"
}

// newStuckServer is a server whose model calls a tool that runs until its turn is stopped;
// started closes when the tool has begun.
func newStuckServer(t *testing.T) (ts *testServer, started <-chan struct{}) {
	ts = newTestServer(t, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "work", Args: `{}`}}}, fakemodel.Turn{Text: "never"})
	ch := make(chan struct{})
	ts.tools.f = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		close(ch)
		<-ctx.Done()
		return model.ToolResult{CallID: c.ID}
	}
	return ts, ch
}

// waitIdle waits until session id's job has ended.
func (ts *testServer) waitIdle(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	sub := ts.mgr.Subscribe([]string{id}, ts.mgr.EventID()) // before the first look: no update is missed
	defer sub.Close()
	for {
		_, st, err := ts.mgr.Snapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Busy {
			return
		}
		if _, err := sub.Next(ctx); err != nil {
			t.Fatalf("the session stayed busy (%v)", err)
		}
	}
}

func sessionsAll() sessions.ListOptions { return sessions.ListOptions{All: true, IncludeHidden: true} }
