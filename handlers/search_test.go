package handlers

import (
	"context"
	"log/slog"
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
	"myco.dev/search"
	"myco.dev/static"
	"myco.dev/workspace"
)

// TestAPISearch (issue 32): GET /api/search finds a word in an answer and in a tool's
// output, with the snippet's match marked and the link to the message; an archived
// session on request; the quick switcher lists title matches, then content matches; the
// sessions page's search shows the content matches under the titles.
func TestAPISearch(t *testing.T) {
	ts := newTestServer(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "work", Args: `{"path":"/src/quasar.go"}`}}},
		fakemodel.Turn{Text: "The lexer splits tokens at every quasar boundary."},
		fakemodel.Turn{Text: "Nothing about it here."})
	ts.tools.f = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		return model.ToolResult{CallID: c.ID, Text: "zebrafish output line"}
	}
	ix, err := search.Open(t.Context(), search.Options{Path: filepath.Join(t.TempDir(), "search.db"), Source: ts.mgr, Debounce: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ix.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; ix.Close() })
	srv := newServerOf(t, ts, ix)

	_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "a", "title": "Lexer review"})
	id := c["session_id"].(string)
	ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "go", "action": "submit", "text": "review the lexer"})
	ts.waitAPIIdle(t, id)
	_, c = ts.call(t, "POST", "/sessions", map[string]any{"request_id": "b", "title": "Old one"})
	old := c["session_id"].(string)
	ts.call(t, "POST", "/sessions/"+old+"/actions", map[string]any{"request_id": "go", "action": "submit", "text": "anything about the quasar?"})
	ts.waitAPIIdle(t, old)
	ts.call(t, "POST", "/sessions/"+old+"/actions", map[string]any{"request_id": "ar", "action": "archive"})
	ix.Changed(id)
	ix.Changed(old)

	get := func(q string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			code, out := srv.call(t, "GET", "/search?"+q, nil)
			if code != 200 {
				t.Fatalf("GET /search?%s = %d %v", q, code, out)
			}
			if len(out["hits"].([]any)) > 0 || time.Now().After(deadline) {
				return out
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	out := get("q=quasar")
	hits := out["hits"].([]any)
	if len(hits) != 3 { // the answer, and the call's input and its path
		t.Fatalf("quasar: %v", hits)
	}
	var answer map[string]any
	for _, h := range hits {
		if h.(map[string]any)["kind"] == "answer" {
			answer = h.(map[string]any)
		}
	}
	if answer == nil || answer["session_id"] != id || !strings.Contains(answer["url"].(string), "/s/"+id+"/t/t1#m-t1-") {
		t.Fatalf("the answer's hit = %v", answer)
	}
	hl := answer["highlights"].([]any)[0].(map[string]any)
	snip := []rune(answer["snippet"].(string))
	if string(snip[int(hl["start"].(float64)):int(hl["end"].(float64))]) != "quasar" {
		t.Errorf("the highlight marks %q", string(snip[int(hl["start"].(float64)):int(hl["end"].(float64))]))
	}
	if out := get("q=zebrafish"); out["hits"].([]any)[0].(map[string]any)["kind"] != "tool_output" {
		t.Errorf("zebrafish: %v", out["hits"])
	}
	if out := get("q=" + url.QueryEscape("quasar?") + "&archived=true"); len(out["hits"].([]any)) != 4 {
		t.Errorf("archived=true: %d hits, want 4 (the archived session's question too)", len(out["hits"].([]any)))
	}
	if code, out := srv.call(t, "GET", "/search?q=", nil); code != 400 || errCode(out) != "missing_field" {
		t.Errorf("no q = %d %v", code, out)
	}
	if code, out := srv.call(t, "GET", "/search?q=x&from=yesterday", nil); code != 400 || errCode(out) != "invalid_field" {
		t.Errorf("from=yesterday = %d %v", code, out)
	}

	_, sw := srv.do(t, "GET", "/profiles/default/switch?q=lexer", nil, nil)
	if i, j := strings.Index(sw, "Lexer review"), strings.Index(sw, "In messages"); i < 0 || j < i || !strings.Contains(sw, "<mark>lexer</mark>") || !strings.Contains(sw, `role="option"`) {
		t.Errorf("the quick switcher's answer:\n%s", sw)
	}
	_, page := srv.do(t, "GET", "/profiles/default/?q=quasar", nil, nil)
	if !strings.Contains(page, `id="in-messages"`) || !strings.Contains(page, "<mark>quasar</mark>") {
		t.Errorf("the sessions page's search shows no content match")
	}
}

// newServerOf is another server over ts's session service, with the search index ix.
func newServerOf(t *testing.T, ts *testServer, ix *search.Index) *testServer {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.ConnContext = web.ConnContext
	u, _ := url.Parse("http://" + srv.Listener.Addr().String())
	files, err := workspace.OpenFiles(ts.ws)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = checkAPI(t, New(Deps{Profile: "default", Sessions: ts.mgr, Default: "fake", Search: ix,
		Models:    []ModelInfo{{Key: "fake", Protocol: "anthropic-messages", ContextWindow: 100000, MaxImageBase64Bytes: 1 << 20}},
		Workspace: files, WorkspaceDir: ts.ws, Dir: ts.dir, Assets: static.New("/static/"),
		Port: u.Port(), UID: os.Getuid(), Ping: 200 * time.Millisecond, Log: slog.New(slog.NewTextHandler(t.Output(), nil))}))
	srv.Start()
	t.Cleanup(srv.Close)
	cp := *ts
	cp.Server, cp.base, cp.host = srv, srv.URL+"/profiles/default/", u.Host
	return &cp
}
