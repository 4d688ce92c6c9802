package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/api"
	"myco.dev/client"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/openapitest"
	"myco.dev/sessions"
)

// TestAPIEndToEnd (issue 22): the Go client drives the real server through every operation
// of the API, and raw requests through every error the document declares; every answer,
// and every event of the streams, is checked against the OpenAPI document the server
// serves, and every answer the document declares is seen (the default answer, a failure of
// the server, once: a profile whose config is broken).
func TestAPIEndToEnd(t *testing.T) {
	answer := "There are 154 files, counted with \"ls\".\nSecond line."
	sleep, _ := json.Marshal(map[string]string{"command": "sleep 30"})
	srv := fakemodel.New(t,
		fakemodel.Turn{Text: answer},
		fakemodel.Turn{Text: "Waiting.", ToolCalls: []fakemodel.ToolCall{{ID: "sleep", Name: "bash", Args: string(sleep)}}},
		fakemodel.Turn{Text: "## Goal\nCount the files.\n## Done\nCounted."})
	home := profileHome(t, "anthropic-messages", srv.URL, "")
	broken := filepath.Join(home, "profiles", "broken")
	os.MkdirAll(broken, 0o700)
	os.WriteFile(filepath.Join(broken, "config.toml"), []byte("[models.m\n"), 0o600)
	_, u, stderr := startServer(t, home)
	root := strings.TrimSuffix(u, "/profiles/default/")
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()

	// The document the server serves is the one in docs/.
	plain := client.New(u)
	served, err := plain.OpenAPI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if committed, _ := os.ReadFile("../../docs/openapi.json"); !bytes.Equal(served, committed) {
		t.Fatal("the server's /api/openapi.json is not docs/openapi.json")
	}
	doc, err := openapitest.Load(served)
	if err != nil {
		t.Fatal(err)
	}
	rec := &openapitest.Recorder{Doc: doc, Base: "/profiles/default/api", Next: http.DefaultTransport}
	brokenRec := &openapitest.Recorder{Doc: doc, Base: "/profiles/broken/api", Next: http.DefaultTransport}
	hc := &http.Client{Transport: rec}
	c := client.New(u)
	c.HTTP = hc
	defer func() {
		for _, e := range append(rec.Errors(), brokenRec.Errors()...) {
			t.Errorf("an answer the document does not declare: %s", e)
		}
		if t.Failed() {
			t.Logf("server:\n%s", stderr)
		}
	}()

	// The profile's events, read (and checked) all along.
	stream, err := c.Events(ctx, client.EventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan api.Event, 1024)
	go func() {
		defer close(events)
		for {
			ev, err := stream.Next()
			if err != nil {
				return
			}
			events <- ev
		}
	}()

	// Discovery.
	if again, err := c.OpenAPI(ctx); err != nil || !bytes.Equal(again, served) {
		t.Errorf("OpenAPI through the recorder = %v", err)
	}
	models, err := c.Models(ctx)
	if err != nil || models.Default != "m" || len(models.Models) != 1 || models.Models[0].Protocol != "anthropic-messages" || models.Models[0].ContextWindow != 100000 {
		t.Errorf("Models = %+v, %v", models, err)
	}
	v, err := c.Version(ctx)
	if err != nil || v.API != "1" || !strings.HasPrefix(v.Build, v.Myco+" (") || v.HostProtocol == 0 {
		t.Errorf("Version = %+v, %v", v, err)
	}

	// A session, a message waited for, its answer.
	s, err := c.Create(ctx, api.CreateRequest{RequestID: "c1", Title: "E2E"})
	if err != nil || !s.Created {
		t.Fatalf("Create = %+v, %v", s, err)
	}
	if again, err := c.Create(ctx, api.CreateRequest{RequestID: "c1", Title: "E2E"}); err != nil || again.Created || again.SessionID != s.SessionID {
		t.Errorf("Create again = %+v, %v", again, err)
	}
	id := s.SessionID
	run, err := c.Run(ctx, id, api.SubmitAction{RequestID: "s1", Text: "Count the files in @/etc/hostname and @nowhere/x.txt."}, 60)
	if err != nil || run.Answer == nil || *run.Answer != answer || run.LastTurn != "done" || len(run.Warnings) != 1 {
		t.Fatalf("Run = %+v, %v", run, err)
	}
	if text, last, _, err := c.Answer(ctx, id); err != nil || text != answer || last != "done" {
		t.Errorf("Answer = %q %q %v", text, last, err)
	}

	// A turn that runs, a submit refused as busy, a cancel that answers once it stopped.
	sub, err := c.Submit(ctx, id, api.SubmitAction{RequestID: "s2", Text: "wait a while"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, c, id, func(s api.SnapshotAnswer) bool {
		for _, m := range s.Messages {
			for _, tc := range m.ToolCalls {
				if tc.Status == "running" {
					return true
				}
			}
		}
		return false
	})
	if _, err := c.Submit(ctx, id, api.SubmitAction{RequestID: "s3", Text: "more"}); !client.IsCode(err, "busy") {
		t.Errorf("a submit while busy = %v, want busy", err)
	}
	stopped, err := c.Cancel(ctx, id, api.CancelRequest{JobID: sub.JobID})
	if err != nil || !stopped.Stopped || stopped.Stopping {
		t.Fatalf("Cancel = %+v, %v", stopped, err)
	}
	if snap, err := c.Snapshot(ctx, id, client.SnapshotOptions{Limit: 1}); err != nil || snap.Busy || snap.LastTurn != "stopped" || snap.LastError == nil || snap.LastError.Code != "stopped" ||
		len(snap.Messages) != 1 || snap.NextBefore == 0 {
		t.Errorf("the snapshot after the cancel = %+v, %v", snap, err)
	}

	// The other actions.
	for _, f := range []func() (api.ActionAnswer, error){
		func() (api.ActionAnswer, error) { return c.SetTitle(ctx, id, "a1", "Renamed, \"quoted\"") },
		func() (api.ActionAnswer, error) { return c.SelectModel(ctx, id, "a2", "m") },
		func() (api.ActionAnswer, error) { return c.Archive(ctx, id, "a3") },
		func() (api.ActionAnswer, error) { return c.Restore(ctx, id, "a4") },
		func() (api.ActionAnswer, error) { return c.Compact(ctx, id, "a5") },
	} {
		if a, err := f(); err != nil || a.SessionID != id {
			t.Errorf("an action = %+v, %v", a, err)
		}
	}
	waitFor(t, ctx, c, id, func(s api.SnapshotAnswer) bool { return !s.Busy && s.ActiveThread != "t1" })

	// A child, a listing in pages.
	child, err := c.Create(ctx, api.CreateRequest{RequestID: "c2", ParentSession: id, Fork: true})
	if err != nil || child.ParentSession != id {
		t.Fatalf("a fork = %+v, %v", child, err)
	}
	page, err := c.List(ctx, client.ListOptions{IncludeHidden: true, Limit: 1})
	if err != nil || len(page.Sessions) != 1 || page.NextCursor == "" {
		t.Fatalf("List = %+v, %v", page, err)
	}
	if rest, err := c.List(ctx, client.ListOptions{IncludeHidden: true, Limit: 1, Cursor: page.NextCursor}); err != nil || len(rest.Sessions) != 1 || rest.NextCursor != "" ||
		rest.Sessions[0].SessionID == page.Sessions[0].SessionID {
		t.Errorf("the next page = %+v, %v", rest, err)
	}
	if snap, err := c.Snapshot(ctx, id, client.SnapshotOptions{}); err != nil || len(snap.Children) != 1 || snap.Children[0].SessionID != child.SessionID || snap.Title != "Renamed, \"quoted\"" {
		t.Errorf("the parent's snapshot = %+v, %v", snap, err)
	}

	// The events of all that, each checked by the recorder: the creations, the ends.
	var types []string
	for len(types) == 0 || !slices.Contains(types, "child_created") {
		select {
		case ev := <-events:
			types = append(types, ev.Info().Type)
		case <-ctx.Done():
			t.Fatalf("the stream did not show the child's creation: %v", types)
		}
	}
	for _, want := range []string{"created", "accepted", "done", "cancelled", "meta", "state"} {
		if !slices.Contains(types, want) {
			t.Errorf("the events %v lack %s", types, want)
		}
	}
	stream.Close()

	// Every error the document declares, with raw requests.
	damaged(t, home, "broken1")
	apiPath := "/profiles/default/api"
	sid := "/sessions/" + id
	long := `{"request_id":"` + strings.Repeat("x", 33<<20) + `"}`
	evil := http.Header{"Origin": {"http://evil.example"}}
	misdirected := http.Header{"Host": {"evil.example:1"}}
	for _, r := range []struct {
		method, path, body, ctype string
		header                    http.Header
		status                    int
	}{
		{"POST", "/sessions", `{}`, "", nil, 400},
		{"POST", "/sessions", `{"request_id":"x"}`, "", evil, 403},
		{"POST", "/sessions", `{"request_id":"x","parent_session":"20260101-000000-abcdef"}`, "", nil, 404},
		{"POST", "/sessions", `{"request_id":"c1","title":"other"}`, "", nil, 409},
		{"POST", "/sessions", long, "", nil, 413},
		{"POST", "/sessions", `{}`, "text/plain", nil, 415},
		{"GET", "/sessions?colour=red", "", "", nil, 400},
		{"GET", sid + "?limit=0", "", "", nil, 400},
		{"GET", "/sessions/nope", "", "", nil, 404},
		{"GET", "/sessions/broken1", "", "", nil, 409},
		{"GET", sid + "/answer?x=1", "", "", nil, 400},
		{"GET", "/sessions/nope/answer", "", "", nil, 404},
		{"GET", "/sessions/broken1/answer", "", "", nil, 409},
		{"GET", sid + "/changes", "", "", nil, 200},
		{"GET", sid + "/changes?turn=x", "", "", nil, 400},
		{"GET", "/sessions/nope/changes", "", "", nil, 404},
		{"GET", "/sessions/broken1/changes", "", "", nil, 409},
		{"GET", sid + "/approvals", "", "", nil, 200},
		{"GET", sid + "/approvals?x=1", "", "", nil, 400},
		{"GET", "/sessions/nope/approvals", "", "", nil, 404},
		{"POST", sid + "/actions", `{"request_id":"ap1","action":"approve","approval":"nope"}`, "", nil, 403},
		{"POST", sid + "/actions", `{"request_id":"x","action":"select_model"}`, "", nil, 400},
		{"POST", sid + "/actions", `{"request_id":"x","action":"archive"}`, "", evil, 403},
		{"POST", "/sessions/nope/actions", `{"request_id":"x","action":"archive"}`, "", nil, 404},
		{"POST", sid + "/actions", `{"request_id":"a1","action":"archive"}`, "", nil, 409},
		{"POST", sid + "/actions", long, "", nil, 413},
		{"POST", sid + "/actions", `{}`, "text/plain", nil, 415},
		{"POST", sid + "/cancel", `{"timeout_secs":-1}`, "", nil, 400},
		{"POST", sid + "/cancel", `{}`, "", evil, 403},
		{"POST", "/sessions/nope/cancel", `{}`, "", nil, 404},
		{"POST", sid + "/cancel", `{"job_id":"` + strings.Repeat("x", 2<<20) + `"}`, "", nil, 413},
		{"POST", sid + "/cancel", `{}`, "text/plain", nil, 415},
		{"GET", "/events?x=1", "", "", nil, 400},
		{"GET", "/events", "", "", evil, 403},
		{"GET", "/events?session=nope", "", "", nil, 404},
		{"GET", "/search?q=" + url.QueryEscape(`"the answer"`), "", "", nil, 200},
		{"GET", "/search", "", "", nil, 400},
		{"GET", "/models?x=1", "", "", nil, 400},
		{"GET", "/version?x=1", "", "", nil, 400},
		{"GET", "/openapi.json?x=1", "", "", nil, 400},
		{"GET", "/nothing", "", "", nil, 404},
		{"DELETE", "/sessions", "", "", nil, 405},
	} {
		if got := raw(t, hc, r.method, root+apiPath+r.path, r.body, r.ctype, r.header); got != r.status {
			t.Errorf("%s %s = %d, want %d", r.method, r.path, got, r.status)
		}
	}
	for _, path := range []string{"/sessions", sid, sid + "/answer", sid + "/changes", sid + "/approvals", sid + "/actions", sid + "/cancel", "/events", "/search", "/models", "/version", "/openapi.json"} {
		// A method the path does not take: the 405 every operation declares (an older
		// server answers a newer operation so).
		if got := raw(t, hc, "PUT", root+apiPath+path, "{}", "", nil); got != 405 {
			t.Errorf("PUT %s = %d, want 405", path, got)
		}
		method := "GET"
		if strings.HasSuffix(path, "/actions") || strings.HasSuffix(path, "/cancel") {
			method = "POST"
		}
		for _, m := range []string{method, "POST"}[:1+boolInt(path == "/sessions")] {
			if got := raw(t, hc, m, root+apiPath+path, "{}", "", misdirected); got != 421 {
				t.Errorf("%s %s with a foreign Host = %d, want 421", m, path, got)
			}
		}
	}
	if got := raw(t, &http.Client{Transport: brokenRec}, "POST", root+"/profiles/broken/api/sessions", `{"request_id":"x"}`, "", nil); got != 503 {
		t.Errorf("a create on the broken profile = %d, want 503", got)
	}
	// A search where there is no index: the broken profile's, as -p's and the chat's API.
	if got := raw(t, &http.Client{Transport: brokenRec}, "GET", root+"/profiles/broken/api/search?q=x", "", "", nil); got != 503 {
		t.Errorf("a search on the broken profile = %d, want 503", got)
	}

	for _, key := range []string{"(none) 404"} {
		if !rec.Seen(key) {
			t.Errorf("the answer %s was not seen", key)
		}
	}
	for _, m := range rec.Missing() {
		if (strings.HasSuffix(m, " default") || strings.HasSuffix(m, " 503")) && brokenRec.Seen(m) || strings.HasSuffix(m, " default") && m != "createSession default" {
			continue // a failure of the server: seen once, on the broken profile
		}
		t.Errorf("the document declares the answer %s, which the test never saw", m)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// raw sends a request with the given body (JSON unless ctype says otherwise) and headers
// (a Host header sets the request's Host) and returns its status.
func raw(t *testing.T, hc *http.Client, method, u, body, ctype string, header http.Header) int {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if body != "" {
		if ctype == "" {
			ctype = "application/json"
		}
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v[0]
			continue
		}
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// waitFor polls session id's snapshot until ok says so.
func waitFor(t *testing.T, ctx context.Context, c *client.Client, id string, ok func(api.SnapshotAnswer) bool) {
	t.Helper()
	for {
		snap, err := c.Snapshot(ctx, id, client.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ok(snap) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("session %s never got there: %+v", id, snap)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// damaged writes a session file whose third line fails its checksum.
func damaged(t *testing.T, home, id string) {
	t.Helper()
	store := sessions.NewStore(filepath.Join(home, "profiles", "default", "session"))
	now := time.Now().UTC()
	if err := store.Create(t.Context(), &sessions.Session{ID: id, Created: now, Threads: []*sessions.Thread{{ID: "t1", Created: now,
		Entries: []sessions.Entry{{Message: model.Message{Role: model.User, Parts: []model.Part{model.TextPart("hello")}}, AcceptedAt: &now},
			{Message: model.Message{Role: model.Assistant, Parts: []model.Part{model.TextPart("hi")}}}}}}}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(store.Path(id))
	os.WriteFile(store.Path(id), bytes.Replace(data, []byte(`"hello"`), []byte(`"jello"`), 1), 0o600)
}
