package handlers

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"myco.dev/internal/fakemodel"
	"myco.dev/sessions"
)

// TestSessionFiles: a session's answers link to its own files (relative links, path:line
// references), the viewer shows them read-only with numbered lines, and nothing out of the
// directory is served: traversal plain or encoded, a symlink, a hidden name. A missing
// file is a 404 that names it; a removed directory, a 404 that says so while the session
// still opens.
func TestSessionFiles(t *testing.T) {
	answer := "See [the entry point](cmd/main.go), `cmd/main.go:3`, [outside](../secret.txt) and /etc/passwd:1."
	ts := newTestServer(t, fakemodel.Turn{Text: answer})
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	write := func(p, text string) {
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(proj, "cmd", "main.go"), "package main\n\nfunc main() {}\n")
	write(filepath.Join(proj, "README.md"), "# Proj\n\nSee [main](cmd/main.go).\n")
	write(filepath.Join(proj, ".env"), "TOP SECRET")
	write(filepath.Join(root, "secret.txt"), "TOP SECRET")
	os.Symlink(filepath.Join(root, "secret.txt"), filepath.Join(proj, "link.txt"))
	os.Symlink(root, filepath.Join(proj, "up"))
	syscall.Mkfifo(filepath.Join(proj, "fifo"), 0o600)

	id, err := ts.mgr.Create(t.Context(), sessions.CreateOptions{Cwd: proj})
	if err != nil {
		t.Fatal(err)
	}
	code, out := ts.call(t, "POST", "/sessions/"+id+"/actions", map[string]any{"request_id": "go", "action": "submit", "text": "where?"})
	if code != 200 {
		t.Fatalf("submit = %d %v", code, out)
	}
	ts.waitAPIIdle(t, id)
	files := "/profiles/default/s/" + id + "/files/"
	_, page := ts.do(t, "GET", "/profiles/default/s/"+id+"/", nil, nil)
	for _, want := range []string{`href="` + files + `cmd/main.go"`, `href="` + files + `cmd/main.go?line=3#L3"`, `id="session-cwd" href="` + files + `"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the session page lacks %s", want)
		}
	}
	if strings.Contains(page, "secret.txt\"") || strings.Contains(page, `href="`+files+`../`) || strings.Contains(page, "etc/passwd?") {
		t.Errorf("a link leaves the directory:\n%s", page)
	}

	resp, body := ts.do(t, "GET", files, nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `href="`+files+`cmd/"`) || strings.Contains(body, ".env") {
		t.Errorf("the directory = %d:\n%s", resp.StatusCode, body)
	}
	resp, body = ts.do(t, "GET", files+"cmd/main.go?line=3", nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="L3"`) || !strings.Contains(body, `href="#L3"`) || !strings.Contains(body, "ch-chroma") {
		t.Errorf("the source file = %d:\n%s", resp.StatusCode, body)
	}
	resp, body = ts.do(t, "GET", files+"README.md", nil, nil)
	if csp := resp.Header.Get("Content-Security-Policy"); resp.StatusCode != 200 || !strings.HasPrefix(csp, "sandbox") || !strings.Contains(body, `href="`+files+`cmd/main.go"`) {
		t.Errorf("a document = %d (CSP %q):\n%s", resp.StatusCode, csp, body)
	}
	if resp, body := ts.do(t, "GET", files+"cmd/main.go?raw=1", nil, nil); resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || !strings.HasPrefix(body, "package main") {
		t.Errorf("raw = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, p := range []string{"../secret.txt", "..%2fsecret.txt", "%2e%2e/secret.txt", "cmd/../../secret.txt", "link.txt", "up/secret.txt", ".env", "fifo", "link.txt?raw=1", "%2fetc%2fpasswd"} {
		resp, body := ts.do(t, "GET", files+p, nil, nil)
		if resp.StatusCode != http.StatusNotFound || strings.Contains(body, "TOP SECRET") {
			t.Errorf("GET files/%s = %d, want 404 and nothing read", p, resp.StatusCode)
		}
	}
	resp, body = ts.do(t, "GET", files+"cmd/gone.go", nil, nil)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "/cmd/gone.go") || !strings.Contains(body, proj) {
		t.Errorf("a missing file = %d, want a 404 naming it and the directory:\n%s", resp.StatusCode, body)
	}

	if err := os.RemoveAll(proj); err != nil {
		t.Fatal(err)
	}
	resp, body = ts.do(t, "GET", files, nil, nil)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "no longer exists") {
		t.Errorf("a removed directory = %d:\n%s", resp.StatusCode, body)
	}
	if resp, page := ts.do(t, "GET", "/profiles/default/s/"+id+"/", nil, nil); resp.StatusCode != 200 || !strings.Contains(page, "the entry point") {
		t.Errorf("the session of a removed directory = %d", resp.StatusCode)
	}
}

// TestNewSessionPage: New session asks for the directory (the server's first, the current
// session's when it sends one), completes a typed path, refuses a bad one in place with the
// reason, and starts the session in a good one or in one picked from those used lately.
func TestNewSessionPage(t *testing.T) {
	ts := newTestServer(t)
	proj := t.TempDir()
	os.Mkdir(filepath.Join(proj, "alpha"), 0o700)
	os.Mkdir(filepath.Join(proj, "beta"), 0o700)
	os.Mkdir(filepath.Join(proj, ".hidden"), 0o700)
	os.WriteFile(filepath.Join(proj, "afile"), nil, 0o600)
	resp, body := ts.do(t, "GET", "/profiles/default/new", nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="new-session-form"`) || !strings.Contains(body, `value="`+ts.dir+`"`) {
		t.Fatalf("GET /new = %d:\n%s", resp.StatusCode, body)
	}
	_, body = ts.do(t, "GET", "/profiles/default/new?cwd="+url.QueryEscape(proj), nil, nil)
	if !strings.Contains(body, `value="`+proj+`"`) {
		t.Errorf("GET /new?cwd= does not offer it")
	}
	_, body = ts.do(t, "GET", "/profiles/default/dirs?cwd="+url.QueryEscape(proj+"/a"), nil, nil)
	if strings.TrimSpace(body) != `<option value="`+proj+`/alpha/"></option>` {
		t.Errorf("completion of %s/a = %q", proj, body)
	}
	_, body = ts.do(t, "GET", "/profiles/default/dirs?cwd="+url.QueryEscape(proj+"/"), nil, nil)
	if !strings.Contains(body, "/alpha/") || !strings.Contains(body, "/beta/") || strings.Contains(body, "hidden") || strings.Contains(body, "afile") {
		t.Errorf("completion of %s/ = %q", proj, body)
	}
	for _, tt := range []struct{ cwd, why string }{
		{"relative/dir", "is not an absolute path"},
		{filepath.Join(proj, "nope"), "does not exist"},
		{filepath.Join(proj, "afile"), "is not a directory"},
	} {
		resp, body := ts.do(t, "POST", "/profiles/default/s", nil, url.Values{"cwd": {tt.cwd}})
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `id="cwd-error"`) || !strings.Contains(body, tt.why) || !strings.Contains(body, `value="`+tt.cwd+`"`) {
			t.Errorf("POST /s cwd %q = %d, want the page again with %q at the field:\n%s", tt.cwd, resp.StatusCode, tt.why, body)
		}
	}
	if list, _ := ts.mgr.List(t.Context(), sessionsAll()); len(list) != 0 {
		t.Fatalf("refused directories made %d sessions", len(list))
	}
	resp, _ = ts.do(t, "POST", "/profiles/default/s", nil, url.Values{"cwd": {filepath.Join(proj, "alpha")}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /s in alpha = %d", resp.StatusCode)
	}
	resp, _ = ts.do(t, "POST", "/profiles/default/s", nil, url.Values{"cwd": {"typed but overridden"}, "pick": {filepath.Join(proj, "beta")}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /s picking beta = %d", resp.StatusCode)
	}
	list, _ := ts.mgr.List(t.Context(), sessionsAll())
	if len(list) != 2 || list[0].Cwd != filepath.Join(proj, "beta") || list[1].Cwd != filepath.Join(proj, "alpha") {
		t.Fatalf("sessions = %+v", list)
	}
	// The directories used lately are offered, the last one first, and the list filters
	// by them.
	_, body = ts.do(t, "GET", "/profiles/default/new", nil, nil)
	if !strings.Contains(body, `data-dir="`+filepath.Join(proj, "alpha")+`"`) || !strings.Contains(body, `id="cwd" name="cwd" value="`+filepath.Join(proj, "beta")+`"`) {
		t.Errorf("the page does not offer alpha, or does not start in beta, the directory used last:\n%s", body)
	}
	_, body = ts.do(t, "GET", "/profiles/default/?cwd="+url.QueryEscape(filepath.Join(proj, "beta")), nil, nil)
	if !strings.Contains(body, list[0].ID) || strings.Contains(body, list[1].ID) || !strings.Contains(body, `id="dir-filter"`) {
		t.Errorf("the list filtered by beta:\n%s", body)
	}
	if resp, _ := ts.do(t, "GET", "/profiles/default/?cwd=rel", nil, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("?cwd=rel = %d", resp.StatusCode)
	}
}

// TestNewSessionFirstMessage: the new-session page makes a session only with its first
// message: visiting it writes nothing, an empty message or a refused directory shows the
// page again with all that was typed and writes nothing, and a message is sent as the
// session's first turn, with its @path attachment read in the session's directory.
func TestNewSessionFirstMessage(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "On it."})
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "notes.md"), []byte("the parser flakes on Tuesdays\n"), 0o600)
	count := func() int {
		list, _ := ts.mgr.List(t.Context(), sessionsAll())
		return len(list)
	}
	for range 3 {
		if resp, _ := ts.do(t, "GET", "/profiles/default/new", nil, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /new = %d", resp.StatusCode)
		}
	}
	for _, tt := range []struct {
		name   string
		form   url.Values
		status int
		want   string
	}{
		{"an empty message", url.Values{"cwd": {proj}, "text": {"  "}}, http.StatusBadRequest, "The message is empty."},
		{"a bad directory", url.Values{"cwd": {proj + "/nope"}, "text": {"fix the parser"}}, http.StatusBadRequest, "does not exist"},
		{"help", url.Values{"cwd": {proj}, "text": {"/help"}}, http.StatusOK, "Commands: /compact"},
	} {
		resp, body := ts.do(t, "POST", "/profiles/default/s", nil, tt.form)
		if resp.StatusCode != tt.status || !strings.Contains(body, tt.want) || !strings.Contains(body, `id="new-session-form"`) {
			t.Errorf("%s: POST /s = %d, want %d and the page with %q:\n%s", tt.name, resp.StatusCode, tt.status, tt.want, body)
		}
		if text := tt.form.Get("text"); text != "/help" && !strings.Contains(body, ">"+text+"</textarea>") {
			t.Errorf("%s: the page lost the message %q", tt.name, text)
		}
	}
	if n := count(); n != 0 {
		t.Fatalf("visits and refusals made %d sessions, want none", n)
	}
	resp, _ := ts.do(t, "POST", "/profiles/default/s", nil, url.Values{"cwd": {proj}, "model": {"fake"}, "text": {"What does @notes.md say?"}})
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/profiles/default/s/") {
		t.Fatalf("POST /s with a message = %d %q", resp.StatusCode, loc)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(loc, "/profiles/default/s/"), "/")
	ts.waitIdle(t, id)
	sess, st, _ := ts.mgr.Snapshot(t.Context(), id)
	if sess.Cwd != proj || st.LastTurn.Answer != "On it." {
		t.Errorf("the session works in %q and answered %q, want %s and the answer", sess.Cwd, st.LastTurn.Answer, proj)
	}
	reqs := ts.fake.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "the parser flakes on Tuesdays") {
		t.Errorf("the first message did not reach the model with its attachment")
	}
	if n := count(); n != 1 {
		t.Errorf("%d sessions, want the one", n)
	}
}

// TestTailDir: a directory too long for a row of the list keeps its last parts, the ones
// that tell projects apart; a short one is left as it is.
func TestTailDir(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"~/src/myco", "~/src/myco"},
		{"/srv/a/b", "/srv/a/b"},
		{"~/src/github.com/some-org/the-project/cmd/tool", "…/some-org/the-project/cmd/tool"},
		{"/tmp/TestBrowserScreenshots1825440846/003", "…/003"},
		{"/x/" + strings.Repeat("long", 10), "…/" + strings.Repeat("long", 10)},
		{"/home/ünïcødé/ünïcødé/ünïcødé/ünïcødé/p", "…/ünïcødé/ünïcødé/ünïcødé/p"},
	} {
		if got := tailDir(tt.in, rowDirRunes); got != tt.want {
			t.Errorf("tailDir(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
