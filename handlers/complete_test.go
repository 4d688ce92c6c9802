package handlers

import (
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCompletePath: a typed path completes from the directory it names (relative to the
// session's, ~/ from home, or absolute), in name order, directories (and links to them)
// ending in "/", hidden names only once a dot is typed, at most max.
func TestCompletePath(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	for _, d := range []string{"map", "map/inner"} {
		os.Mkdir(filepath.Join(dir, d), 0o700)
	}
	for _, f := range []string{"main.go", "notes.md", ".env", "map/a.txt"} {
		os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600)
	}
	os.Symlink(filepath.Join(dir, "map"), filepath.Join(dir, "link"))
	os.WriteFile(filepath.Join(home, "todo.txt"), nil, 0o600)
	paths := func(cs []pathChoice) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Path)
		}
		return out
	}
	for _, tt := range []struct {
		typed    string
		dirsOnly bool
		max      int
		want     []string
	}{
		{"", false, 20, []string{"link/", "main.go", "map/", "notes.md"}},
		{"ma", false, 20, []string{"main.go", "map/"}},
		{"map/", false, 20, []string{"map/a.txt", "map/inner/"}},
		{".", false, 20, []string{".env"}},
		{"~/to", false, 20, []string{"~/todo.txt"}},
		{dir + "/no", false, 20, []string{dir + "/notes.md"}},
		{"", true, 20, []string{"link/", "map/"}},
		{"", false, 2, []string{"link/", "main.go"}},
		{"nothing/here", false, 20, nil},
	} {
		if got := paths(completePath(tt.typed, dir, home, tt.dirsOnly, tt.max)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("completePath(%q, dirsOnly %v, max %d) = %q, want %q", tt.typed, tt.dirsOnly, tt.max, got, tt.want)
		}
	}
}

// TestCompleteAttachmentRoute: the composer's completion answers JSON from the session's
// directory.
func TestCompleteAttachmentRoute(t *testing.T) {
	ts := newTestServer(t)
	_, p := ts.session(t)
	sess, _, _ := ts.mgr.Snapshot(t.Context(), strings.TrimSuffix(strings.TrimPrefix(p, "/profiles/default/s/"), "/"))
	os.WriteFile(filepath.Join(sess.Cwd, "report-2026.md"), nil, 0o600)
	resp, body := ts.do(t, "GET", p+"complete?q=report", http.Header{"Sec-Fetch-Site": {"same-origin"}}, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || strings.TrimSpace(body) != `[{"path":"report-2026.md"}]` {
		t.Errorf("complete = %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if _, page := ts.do(t, "GET", p, nil, nil); !strings.Contains(page, `data-complete="`+p+`complete"`) || !strings.Contains(page, `id="at-list"`) {
		t.Error("the composer does not offer completion")
	}
}
