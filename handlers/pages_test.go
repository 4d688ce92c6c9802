package handlers

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
)

func TestNotFound(t *testing.T) {
	ts := newTestServer(t)
	id, p := ts.session(t)
	for _, path := range []string{
		"/profiles/default/s/nope/", "/profiles/default/s/../../etc/", "/profiles/default/s/" + id + "/t/t9",
		"/profiles/default/s/" + id + "/tool/t1/nope", "/profiles/default/s/" + id + "/image/t1/0/0/0",
		"/profiles/other/", "/nope", "/profiles/default/workspace/missing.md",
	} {
		resp, body := ts.do(t, "GET", path, nil, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, resp.StatusCode)
		}
		if !strings.Contains(body, "Not Found") || strings.Contains(body, "sessions: not found") {
			t.Errorf("GET %s: a page for people, without the error chain, wanted:\n%s", path, body)
		}
	}
	if resp, _ := ts.do(t, "POST", "/profiles/default/s/nope/submit", nil, url.Values{"text": {"hi"}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("submit to an unknown session = %d, want 404", resp.StatusCode)
	}
	if resp, _ := ts.do(t, "GET", p+"earlier?thread=t1&before=x", nil, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("earlier with a bad cursor = %d, want 400", resp.StatusCode)
	}
}

// TestSubmitAndRender sends a message through the form and reads the page: the user's
// text as typed (its Markdown not rendered, its HTML escaped), the tool card with its
// output, the answer's Markdown rendered; no hidden system part.
func TestSubmitAndRender(t *testing.T) {
	ts := newTestServer(t,
		fakemodel.Turn{Text: "Let me *work*.", ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "work", Args: `{"what":"it"}`}}},
		fakemodel.Turn{Text: "Done: `worked`."})
	id, p := ts.session(t)
	resp, body := ts.do(t, "POST", p+"submit", http.Header{"HX-Request": {"true"}}, url.Values{"text": {"Please **do** <b>it</b>"}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="composer"`) {
		t.Fatalf("submit = %d:\n%s", resp.StatusCode, body)
	}
	ts.waitIdle(t, id)
	resp, page := ts.do(t, "GET", p, nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("page = %d", resp.StatusCode)
	}
	for _, want := range []string{`<div class="plain">Please **do** &lt;b&gt;it&lt;/b&gt;</div>`, `id="tool-c1"`, `class="tool ok"`,
		"worked", "<em>work</em>", "Done:", `data-events="/profiles/default/s/` + id + `/events?after=`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, unwanted := range []string{"[myco: runtime]", "<b>it</b>", "<strong>do</strong>"} {
		if strings.Contains(page, unwanted) {
			t.Errorf("page shows %q: a hidden system part, raw HTML, or the user's text rendered instead of shown as typed", unwanted)
		}
	}
	// the tool's whole output
	resp, out := ts.do(t, "GET", p+"tool/t1/c1", nil, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(out, "worked") {
		t.Errorf("tool output = %d %q", resp.StatusCode, out)
	}
}

// TestSubmitRefusals: an empty message, an unknown command and a form over the size limit
// are refused with a sentence; a message sent while busy is queued, shown with Edit and
// Cancel, and runs, as edited, when the turn ends; a withdrawn one never runs.
func TestSubmitRefusals(t *testing.T) {
	release := make(chan struct{})
	ts := newTestServer(t, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "work", Args: `{}`}}}, fakemodel.Turn{Text: "ok"},
		fakemodel.Turn{Text: "queued ok"})
	started := make(chan struct{})
	ts.tools.f = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return model.ToolResult{CallID: c.ID, Text: "done"}
	}
	id, p := ts.session(t)
	hx := http.Header{"HX-Request": {"true"}}
	for _, tt := range []struct {
		text string
		code int
		msg  string
	}{
		{"   ", 400, "The message is empty."},
		{"/frobnicate now", 400, "Unknown command"},
	} {
		resp, body := ts.do(t, "POST", p+"submit", hx, url.Values{"text": {tt.text}})
		if resp.StatusCode != tt.code || !strings.Contains(body, tt.msg) {
			t.Errorf("submit %q = %d %q, want %d with %q", tt.text, resp.StatusCode, body, tt.code, tt.msg)
		}
	}
	if resp, body := ts.do(t, "POST", p+"submit", hx, url.Values{"text": {"go"}}); resp.StatusCode != http.StatusOK {
		t.Fatalf("first submit = %d %s", resp.StatusCode, body)
	}
	<-started
	for _, text := range []string{"second", "withdrawn"} {
		resp, body := ts.do(t, "POST", p+"submit", hx, url.Values{"text": {text}})
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Queued") {
			t.Errorf("submit while busy = %d:\n%s\nwant it queued", resp.StatusCode, body)
		}
	}
	sess, _, _ := ts.mgr.Snapshot(t.Context(), id)
	if len(sess.Queue) != 2 {
		t.Fatalf("queue = %+v, want two messages", sess.Queue)
	}
	_, page := ts.do(t, "GET", p, nil, nil)
	for _, want := range []string{`class="queued-text">second<`, ">Edit</summary>", ">Cancel</button>", `action="` + p + "queue/" + sess.Queue[0].ID + `/edit"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q of the queue", want)
		}
	}
	if resp, _ := ts.do(t, "POST", p+"queue/"+sess.Queue[0].ID+"/edit", hx, url.Values{"text": {"second, edited"}}); resp.StatusCode != http.StatusNoContent {
		t.Errorf("edit queued = %d", resp.StatusCode)
	}
	if resp, _ := ts.do(t, "POST", p+"queue/"+sess.Queue[1].ID+"/delete", hx, url.Values{}); resp.StatusCode != http.StatusNoContent {
		t.Errorf("withdraw queued = %d", resp.StatusCode)
	}
	if resp, _ := ts.do(t, "POST", p+"queue/"+sess.Queue[1].ID+"/delete", hx, url.Values{}); resp.StatusCode != http.StatusConflict {
		t.Errorf("withdraw again = %d, want 409", resp.StatusCode)
	}
	big := strings.Repeat("x", 2<<20)
	if resp, _ := ts.do(t, "POST", p+"submit", hx, url.Values{"text": {big}}); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 MiB form = %d, want 413", resp.StatusCode)
	}
	close(release)
	var texts []string
	for deadline := time.Now().Add(10 * time.Second); ; {
		ts.waitIdle(t, id)
		sess, _, _ = ts.mgr.Snapshot(t.Context(), id)
		texts = texts[:0]
		for _, e := range sess.Latest().Entries {
			if e.AcceptedAt != nil {
				texts = append(texts, e.Message.Text())
			}
		}
		if len(texts) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Join(texts, "|") != "go|second, edited" || len(sess.Queue) != 0 {
		t.Errorf("accepted inputs = %q, queue %d; want go, then the edited queued message", texts, len(sess.Queue))
	}
}

// TestStopFromTheBrowser stops a running turn through the Stop form.
func TestStopFromTheBrowser(t *testing.T) {
	ts, started := newStuckServer(t)
	id, p := ts.session(t)
	ts.do(t, "POST", p+"submit", http.Header{"HX-Request": {"true"}}, url.Values{"text": {"go"}})
	<-started
	_, page := ts.do(t, "GET", p, nil, nil)
	_, st, _ := ts.mgr.Snapshot(t.Context(), id)
	if !strings.Contains(page, `name="job" value="`+st.JobID+`"`) {
		t.Errorf("the Stop form does not name the running job %q", st.JobID)
	}
	// A Stop sent for a job that has ended since does not stop the one that runs now.
	ts.do(t, "POST", p+"stop", http.Header{"HX-Request": {"true"}}, url.Values{"job": {"an-earlier-job"}})
	if _, st, _ := ts.mgr.Snapshot(t.Context(), id); !st.Busy {
		t.Fatal("a Stop for another job stopped the running turn")
	}
	if resp, _ := ts.do(t, "POST", p+"stop", http.Header{"HX-Request": {"true"}}, url.Values{"job": {st.JobID}}); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("stop = %d, want 204", resp.StatusCode)
	}
	ts.waitIdle(t, id)
	_, page = ts.do(t, "GET", p, nil, nil)
	if !strings.Contains(page, "Stopped.") || !strings.Contains(page, `class="tool unknown"`) {
		t.Errorf("the page after a stop lacks the stop note or the unknown outcome")
	}
}

// TestArchiveRestoreAndSearch archives from the list, filters, restores and searches.
func TestArchiveRestoreAndSearch(t *testing.T) {
	ts := newTestServer(t)
	a, pa := ts.session(t)
	ts.mgr.SetTitle(t.Context(), a, "Fix the parser")
	b, _ := ts.session(t)
	ts.mgr.SetTitle(t.Context(), b, "Write the docs")
	hx := http.Header{"HX-Request": {"true"}}
	resp, row := ts.do(t, "POST", pa+"archive", hx, url.Values{})
	if resp.StatusCode != http.StatusOK || !strings.Contains(row, "Restore") || !strings.Contains(row, `id="row-`+a+`"`) {
		t.Fatalf("archive from the list = %d:\n%s", resp.StatusCode, row)
	}
	list := func(q string) string {
		_, body := ts.do(t, "GET", "/profiles/default/?"+q, nil, nil)
		return body
	}
	if body := list("filter=active"); strings.Contains(body, "Fix the parser") || !strings.Contains(body, "Write the docs") {
		t.Errorf("active list after archiving shows the wrong sessions")
	}
	if body := list("filter=archived"); !strings.Contains(body, "Fix the parser") || strings.Contains(body, "Write the docs") {
		t.Errorf("archived list shows the wrong sessions")
	}
	if resp, _ := ts.do(t, "POST", pa+"restore", nil, url.Values{}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("restore = %d, want 303", resp.StatusCode)
	}
	_, frag := ts.do(t, "GET", "/profiles/default/?filter=all&q=PARSER", hx, nil)
	if !strings.HasPrefix(frag, `<ul id="session-list"`) || !strings.Contains(frag, "Fix the parser") || strings.Contains(frag, "Write the docs") {
		t.Errorf("search fragment:\n%s", frag)
	}
	if resp, _ := ts.do(t, "GET", "/profiles/default/?filter=bogus", nil, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad filter = %d, want 400", resp.StatusCode)
	}
}

// TestNewSessionAndModel creates a session from the form and switches its model.
func TestNewSessionAndModel(t *testing.T) {
	ts := newTestServer(t)
	resp, _ := ts.do(t, "POST", "/profiles/default/s", nil, url.Values{"model": {"other"}})
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/profiles/default/s/") {
		t.Fatalf("new session = %d %q", resp.StatusCode, loc)
	}
	if resp, _ := ts.do(t, "POST", "/profiles/default/s", nil, url.Values{"model": {"nope"}}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("new session with an unknown model = %d, want 400", resp.StatusCode)
	}
	if resp, _ := ts.do(t, "POST", loc+"model", nil, url.Values{"model": {"fake"}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("select model = %d", resp.StatusCode)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(loc, "/profiles/default/s/"), "/")
	if _, st, _ := ts.mgr.Snapshot(t.Context(), id); st.Model != "fake" {
		t.Errorf("model = %q, want fake", st.Model)
	}
}

// TestAttachments attaches a text file and an image with @path, and refuses a binary.
func TestAttachments(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "seen"})
	id, p := ts.session(t)
	dir := filepath.Dir(ts.ws)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("remember the milk\n"), 0o600)
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...)
	os.WriteFile(filepath.Join(dir, "shot.png"), png, 0o600)
	os.WriteFile(filepath.Join(dir, "blob.bin"), []byte{0, 1, 2, 0xff}, 0o600)
	hx := http.Header{"HX-Request": {"true"}}
	if resp, body := ts.do(t, "POST", p+"submit", hx, url.Values{"text": {"look at @blob.bin"}}); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "neither text nor") {
		t.Errorf("binary attachment = %d %q, want 400", resp.StatusCode, body)
	}
	if resp, _ := ts.do(t, "POST", p+"submit", hx, url.Values{"text": {"see @notes.txt and @shot.png, mail me@example.com"}}); resp.StatusCode != http.StatusOK {
		t.Fatalf("submit = %d", resp.StatusCode)
	}
	ts.waitIdle(t, id)
	body := string(ts.fake.Requests()[0].Body)
	if !strings.Contains(body, "remember the milk") || !strings.Contains(body, `"media_type":"image/png"`) {
		t.Errorf("the request lacks the attachments:\n%.2000s", body)
	}
	_, page := ts.do(t, "GET", p, nil, nil)
	i := strings.Index(page, p+"image/t1/0/")
	if i < 0 {
		t.Fatalf("the page does not show the attached image")
	}
	src := page[i : i+strings.IndexByte(page[i:], '"')]
	resp, img := ts.do(t, "GET", src, nil, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" || img[:4] != "\x89PNG" {
		t.Errorf("image = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// multipartSubmit posts text and files (name → bytes) as the composer does.
func multipartSubmit(t *testing.T, ts *testServer, path, text string, files map[string][]byte) (*http.Response, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("text", text)
	for name, data := range files {
		fw, _ := mw.CreateFormFile("files", name)
		fw.Write(data)
	}
	mw.Close()
	req, _ := http.NewRequest("POST", ts.URL+path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("HX-Request", "true")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestUploads: files sent with the composer (the Attach button, a paste, a drop) reach the
// model as an image and as quoted text, show as chips rather than their whole text, and a
// binary or an image over the model's cap is refused in words that name it and the sizes.
// An @path that names no file is sent as text, with a note that says so.
func TestUploads(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "seen"}, fakemodel.Turn{Text: "again"})
	id, p := ts.session(t)
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...)
	if resp, body := multipartSubmit(t, ts, p+"submit", "look", map[string][]byte{"blob.bin": {0, 1, 2, 0xff}}); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "blob.bin is neither text nor") {
		t.Errorf("a binary upload = %d %q, want 400 naming it", resp.StatusCode, body)
	}
	big := append(append([]byte(nil), png...), make([]byte, 6<<20)...)
	if resp, body := multipartSubmit(t, ts, p+"submit", "look", map[string][]byte{"huge.png": big}); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "huge.png is an image of") || !strings.Contains(body, "max_image_base64_bytes") {
		t.Errorf("an image over the cap = %d %q, want 400 naming it and the sizes", resp.StatusCode, body)
	}
	resp, body := multipartSubmit(t, ts, p+"submit", "see these and @missing/notes.md", map[string][]byte{"shot.png": png, "notes.txt": []byte("remember the milk\n")})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "@missing/notes.md names no file") {
		t.Fatalf("upload = %d %q, want the composer with a note on the missing @path", resp.StatusCode, body)
	}
	ts.waitIdle(t, id)
	req := string(ts.fake.Requests()[0].Body)
	if !strings.Contains(req, "remember the milk") || !strings.Contains(req, `"media_type":"image/png"`) {
		t.Errorf("the request lacks the uploads:\n%.2000s", req)
	}
	_, page := ts.do(t, "GET", p, nil, nil)
	for _, want := range []string{`<details class="attached">`, "notes.txt", `<figure class="attached image">`, "shot.png</figcaption>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Files alone, without text, are a message too.
	if resp, _ := multipartSubmit(t, ts, p+"submit", "", map[string][]byte{"only.txt": []byte("just this")}); resp.StatusCode != http.StatusOK {
		t.Errorf("files without text = %d, want them sent", resp.StatusCode)
	}
}

// TestUploadSpoolRemoved: an upload over the part held in memory (8 MiB) is spooled to
// $TMPDIR/multipart-*, and those files are gone once it is answered, whether it was
// accepted or refused, sent to a session or with a new one.
func TestUploadSpoolRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ts := newTestServer(t, fakemodel.Turn{Text: "seen"}, fakemodel.Turn{Text: "seen too"})
	id, p := ts.session(t)
	// 14 images at the model's cap (1 MiB as base64): 10.5 MiB, accepted.
	images := map[string][]byte{}
	for i := range 14 {
		images[fmt.Sprintf("shot%d.png", i)] = append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 768<<10-8)...)
	}
	binary := map[string][]byte{"blob.bin": append([]byte{0, 1, 2, 0xff}, make([]byte, 10<<20)...)} // 10 MiB, refused
	for _, tt := range []struct {
		name, path string
		files      map[string][]byte
		code       int
	}{
		{"accepted by a session", p + "submit", images, http.StatusOK},
		{"refused by a session", p + "submit", binary, http.StatusBadRequest},
		{"accepted with a new session", "/profiles/default/s", images, http.StatusNoContent},
		{"refused with a new session", "/profiles/default/s", binary, http.StatusBadRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			size := 0
			for _, b := range tt.files {
				size += len(b)
			}
			if size <= maxUploadMemory {
				t.Fatalf("the upload is %d bytes, not over the %d held in memory: nothing would be spooled", size, maxUploadMemory)
			}
			resp, body := multipartSubmit(t, ts, tt.path, "look", tt.files)
			if resp.StatusCode != tt.code {
				t.Fatalf("POST %s = %d %.300s, want %d", tt.path, resp.StatusCode, body, tt.code)
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "multipart-*")); len(left) > 0 {
				t.Errorf("POST %s left %v in $TMPDIR", tt.path, left)
			}
		})
	}
	ts.waitIdle(t, id)
}
