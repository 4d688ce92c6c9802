package handlers

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWorkspaceViewer reads the workspace through the viewer: a listing, a rendered
// Markdown document under the sandboxing policy, text as text (HTML included), a raw file
// with an allow-listed type, and an image.
func TestWorkspaceViewer(t *testing.T) {
	ts := newTestServer(t)
	w := func(name, content string) {
		p := filepath.Join(ts.ws, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w("notes/plan.md", "# The plan\n\nSee [the log](log.txt) and ![a remote image](https://evil.example/x.png).\n")
	w("notes/log.txt", "line <b>1</b>\n")
	w("page.html", "<script>alert(1)</script>")
	w("noext", "<html><script>alert(1)</script></html>")
	w("pic.png", "\x89PNG\r\n\x1a\n"+strings.Repeat("\x00", 32))
	w("fake.png", "not a png at all")
	w(".hidden", "secret")

	resp, body := ts.do(t, "GET", "/profiles/default/workspace/", nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `href="/profiles/default/workspace/notes/"`) || strings.Contains(body, ".hidden") {
		t.Errorf("listing = %d:\n%s", resp.StatusCode, body)
	}
	resp, body = ts.do(t, "GET", "/profiles/default/workspace/notes/plan.md", nil, nil)
	csp := resp.Header.Get("Content-Security-Policy")
	if resp.StatusCode != 200 || !strings.HasPrefix(csp, "sandbox") || strings.Contains(csp, "allow-same-origin") || strings.Contains(csp, "script-src") {
		t.Errorf("document = %d, CSP %q", resp.StatusCode, csp)
	}
	if !strings.Contains(body, "<h1") || !strings.Contains(body, `href="/profiles/default/workspace/notes/log.txt"`) || strings.Contains(body, `src="https://evil.example`) {
		t.Errorf("document body:\n%s", body)
	}
	if strings.Contains(body, "<script") {
		t.Errorf("a document page holds a script")
	}
	for _, tt := range []struct{ path, typ, not string }{
		{"page.html?raw=1", "text/plain; charset=utf-8", ""},
		{"noext?raw=1", "text/plain; charset=utf-8", ""},
		{"pic.png?raw=1", "image/png", ""},
		{"fake.png?raw=1", "application/octet-stream", ""},
		{"notes/plan.md?raw=1", "text/plain; charset=utf-8", ""},
	} {
		resp, _ := ts.do(t, "GET", "/profiles/default/workspace/"+tt.path, nil, nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != tt.typ || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "sandbox") {
			t.Errorf("raw %s = %d %q (CSP %q), want %q", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Security-Policy"), tt.typ)
		}
	}
	if resp, _ := ts.do(t, "GET", "/profiles/default/workspace/fake.png?raw=1", nil, nil); !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Errorf("a download is not an attachment")
	}
	_, body = ts.do(t, "GET", "/profiles/default/workspace/page.html", nil, nil)
	// Shown as highlighted source: escaped, never markup.
	if strings.Contains(body, "<script>alert") || !strings.Contains(body, "&lt;") || !strings.Contains(body, "alert") || !strings.Contains(body, `class="ch-chroma"`) {
		t.Errorf("an HTML file is not shown as escaped, highlighted text:\n%s", body)
	}
	_, body = ts.do(t, "GET", "/profiles/default/workspace/pic.png", nil, nil)
	if !strings.Contains(body, `<img class="file-image" src="/profiles/default/workspace/pic.png?raw=1"`) {
		t.Errorf("an image page lacks the image")
	}
}

// TestWorkspaceEscapes: traversal (plain and encoded), symlinks out of the workspace, a
// sibling directory whose name starts with the workspace's, special files and hidden names
// all answer the same 404; nothing outside is read.
func TestWorkspaceEscapes(t *testing.T) {
	ts := newTestServer(t)
	outside := filepath.Join(filepath.Dir(ts.ws), "workspace-evil")
	os.MkdirAll(outside, 0o700)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOP SECRET"), 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(ts.ws), "config.toml"), []byte("TOP SECRET"), 0o600)
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ts.ws, "link.txt"))
	os.Symlink(outside, filepath.Join(ts.ws, "linkdir"))
	os.Symlink("/dev/zero", filepath.Join(ts.ws, "zero"))
	os.WriteFile(filepath.Join(ts.ws, ".env"), []byte("TOP SECRET"), 0o600)
	if err := syscall.Mkfifo(filepath.Join(ts.ws, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"../config.toml", "..%2fconfig.toml", "%2e%2e/config.toml", "%2e%2e%2fconfig.toml", "notes/../../config.toml",
		"..%5cconfig.toml", "%2fetc%2fpasswd", "/etc/passwd", "link.txt", "linkdir/secret.txt", "linkdir/",
		"../workspace-evil/secret.txt", "zero", "fifo", ".env", "fifo?raw=1", "link.txt?raw=1", "a%00b",
	} {
		resp, body := ts.do(t, "GET", "/profiles/default/workspace/"+p, nil, nil)
		if resp.StatusCode != http.StatusNotFound || strings.Contains(body, "TOP SECRET") {
			t.Errorf("GET workspace/%s = %d, want 404 and nothing read", p, resp.StatusCode)
		}
	}
}

// TestWorkspaceNamesEscaped: a file name with spaces, unicode and a percent sign is
// linked escaped and found.
func TestWorkspaceNamesEscaped(t *testing.T) {
	ts := newTestServer(t)
	name := "my notes – 100%.txt"
	os.WriteFile(filepath.Join(ts.ws, name), []byte("hello"), 0o600)
	_, body := ts.do(t, "GET", "/profiles/default/workspace/", nil, nil)
	href := "/profiles/default/workspace/my%20notes%20%E2%80%93%20100%25.txt"
	if !strings.Contains(body, href) {
		t.Fatalf("listing lacks %s:\n%s", href, body)
	}
	if resp, body := ts.do(t, "GET", href, nil, nil); resp.StatusCode != 200 || !strings.Contains(body, "hello") {
		t.Errorf("GET %s = %d", href, resp.StatusCode)
	}
}

// TestWorkspaceReservedNames: names with characters that the viewer's links escape but a
// URL's path need not (';', ','), or that would end the path ('?', '#'), are found through
// their links, and a directory's redirect to its slash keeps them escaped.
func TestWorkspaceReservedNames(t *testing.T) {
	ts := newTestServer(t)
	dir, name := "x;y?z#w", "a;b,c.txt"
	if err := os.Mkdir(filepath.Join(ts.ws, dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts.ws, dir, name), []byte("found"), 0o600); err != nil {
		t.Fatal(err)
	}
	dirURL := "/profiles/default/workspace/x%3By%3Fz%23w"
	resp, _ := ts.do(t, "GET", dirURL, nil, nil)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || loc != dirURL+"/" {
		t.Errorf("GET %s = %d to %q, want a redirect to %s/", dirURL, resp.StatusCode, loc, dirURL)
	}
	resp, body := ts.do(t, "GET", dirURL+"/", nil, nil)
	fileURL := dirURL + "/a%3Bb%2Cc.txt"
	if resp.StatusCode != 200 || !strings.Contains(body, `href="`+fileURL+`"`) {
		t.Fatalf("GET %s/ = %d, want a listing that links %s:\n%s", dirURL, resp.StatusCode, fileURL, body)
	}
	if resp, body := ts.do(t, "GET", fileURL, nil, nil); resp.StatusCode != 200 || !strings.Contains(body, "found") {
		t.Errorf("GET %s = %d", fileURL, resp.StatusCode)
	}
	if resp, body := ts.do(t, "GET", fileURL+"?raw=1", nil, nil); resp.StatusCode != 200 || body != "found" {
		t.Errorf("GET %s?raw=1 = %d %q", fileURL, resp.StatusCode, body)
	}
}
