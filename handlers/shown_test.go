package handlers

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/internal/termtext"
	"myco.dev/sessions"
	"myco.dev/views"
)

// noRaw fails if a page holds a control character, a bidirectional control or a byte that
// is not UTF-8, raw.
func noRaw(t *testing.T, what, body string) {
	t.Helper()
	if termtext.Safe(body) != body {
		i := 0
		for i < len(body) && termtext.Safe(body[:i+1]) == body[:i+1] {
			i++
		}
		t.Errorf("%s holds a raw control character at %d: …%q…", what, i, body[max(0, i-80):min(len(body), i+40)])
	}
}

// TestWorkspaceNamesShown: a file whose name turns round with U+202E and carries a
// terminal escape (ESC ] 0 … BEL), in a directory whose name has a bidi isolate, is listed
// with visible escapes and a percent-encoded link that finds it; its page's title and
// crumbs show the escapes too. Nothing on either page is raw.
func TestWorkspaceNamesShown(t *testing.T) {
	ts := newTestServer(t)
	dir, name := "in\u2066side", "rtl\u202etxt.exe\x1b]0;pwned\x07"
	if err := os.Mkdir(filepath.Join(ts.ws, dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts.ws, dir, name), []byte("text \x1b[2J\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts.ws, dir, "log.txt"), []byte("clear \x1b[2J, \u202eright to left\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, body := ts.do(t, "GET", "/profiles/default/workspace/", nil, nil)
	noRaw(t, "the workspace root", body)
	if !strings.Contains(body, `>in\u2066side/</a>`) {
		t.Errorf("the root lists the directory without its visible escape:\n%s", body)
	}

	dirURL := "/profiles/default/workspace/" + url.PathEscape(dir) + "/"
	resp, body := ts.do(t, "GET", dirURL, nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d", dirURL, resp.StatusCode)
	}
	noRaw(t, "the listing", body)
	doc := parsePage(t, body)
	fileURL := dirURL + url.PathEscape(name)
	var link string
	for _, a := range findAll(doc, "a") {
		if attr(a, "href") == fileURL {
			link = textOf(a)
		}
	}
	if want := `rtl\u202etxt.exe\x1b]0;pwned\x07`; link != want {
		t.Errorf("the listing links %s as %q, want %q:\n%s", fileURL, link, want, body)
	}

	resp, body = ts.do(t, "GET", fileURL, nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d", fileURL, resp.StatusCode)
	}
	noRaw(t, "the file's page", body)
	for _, want := range []string{`<title id="page-title">rtl\u202etxt.exe\x1b]0;pwned\x07 · myco</title>`, `<span aria-current="page">rtl\u202etxt.exe\x1b]0;pwned\x07</span>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the file's page lacks %s:\n%s", want, body)
		}
	}
	// A text file's text.
	_, body = ts.do(t, "GET", dirURL+"log.txt", nil, nil)
	noRaw(t, "a text file's page", body)
	if want := `clear \x1b[2J, \u202eright to left`; !strings.Contains(body, want) {
		t.Errorf("the text file's page lacks %s:\n%s", want, body)
	}
	// The raw bytes are still the file's.
	if _, raw := ts.do(t, "GET", fileURL+"?raw=1", nil, nil); raw != "text \x1b[2J\n" {
		t.Errorf("raw = %q", raw)
	}
}

// TestSessionTitleShown: a session title with a bidirectional override and a terminal
// escape is shown with the override escaped in the page's title, its heading, the sidebar
// and the sessions list (the service itself turns control characters into spaces, and the
// store makes bytes that are not UTF-8 U+FFFD, so only the bidi control arrives).
func TestSessionTitleShown(t *testing.T) {
	ts := newTestServer(t)
	id, err := ts.mgr.Create(t.Context(), sessions.CreateOptions{Title: "rtl\u202etxt.exe\x1b]0;pwned\x07"})
	if err != nil {
		t.Fatal(err)
	}
	const shown = `rtl\u202etxt.exe ]0;pwned`
	_, page := ts.do(t, "GET", "/profiles/default/s/"+id+"/", nil, nil)
	noRaw(t, "the session page", page)
	doc := parsePage(t, page)
	for _, tt := range []struct{ what, got, want string }{
		{"<title>", textOf(findAll(doc, "title")[0]), shown + " · myco"},
		{"#" + views.IDTitle, textOf(byID(doc, views.IDTitle)), shown},
		{"#" + views.SidebarID(id), textOf(byID(doc, views.SidebarID(id))), shown},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.what, tt.got, tt.want)
		}
	}
	_, list := ts.do(t, "GET", "/profiles/default/?filter=all", nil, nil)
	noRaw(t, "the sessions page", list)
	if got := textOf(findAll(byID(parsePage(t, list), views.RowID(id)), "a")[0]); got != shown {
		t.Errorf("the sessions list shows %q, want %q", got, shown)
	}
}
