package handlers

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/sessions"
)

// TestAPICwd: a create takes cwd, the snapshot and the list carry it, ?cwd= filters; a
// relative, missing or non-directory cwd is a 400 whose message names cwd and what is
// wrong, and nothing is created; a child inherits its parent's directory.
func TestAPICwd(t *testing.T) {
	ts := newTestServer(t)
	proj, other := t.TempDir(), t.TempDir()
	code, out := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "p", "cwd": proj})
	if code != 201 {
		t.Fatalf("create in %s = %d %v", proj, code, out)
	}
	id := out["session_id"].(string)
	if _, snap := ts.call(t, "GET", "/sessions/"+id, nil); snap["cwd"] != proj {
		t.Errorf("snapshot cwd = %v, want %s", snap["cwd"], proj)
	}
	_, kid := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "k", "parent_session": id})
	if _, snap := ts.call(t, "GET", "/sessions/"+kid["session_id"].(string), nil); snap["cwd"] != proj {
		t.Errorf("a child's cwd = %v, want its parent's %s", snap["cwd"], proj)
	}
	_, plain := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "plain"})
	_, snap := ts.call(t, "GET", "/sessions/"+plain["session_id"].(string), nil)
	if d, _ := snap["cwd"].(string); d == "" || d == proj {
		t.Errorf("a session without cwd works in %q, want the server's directory", d)
	}
	if code, out := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "p", "cwd": other}); code != 409 || errCode(out) != "request_id_conflict" {
		t.Errorf("the same request_id in another cwd = %d %v, want request_id_conflict", code, out)
	}

	file := filepath.Join(proj, "f.txt")
	os.WriteFile(file, []byte("x"), 0o600)
	for _, tt := range []struct{ cwd, want string }{
		{"rel/dir", `cwd "rel/dir" is not an absolute path`},
		{filepath.Join(proj, "nope"), `cwd "` + filepath.Join(proj, "nope") + `" does not exist`},
		{file, `cwd "` + file + `" is not a directory`},
	} {
		code, out := ts.call(t, "POST", "/sessions", map[string]any{"request_id": "bad " + tt.cwd, "cwd": tt.cwd})
		msg, _ := out["error"].(map[string]any)["message"].(string)
		if code != 400 || errCode(out) != "invalid_field" || !strings.HasPrefix(msg, tt.want) {
			t.Errorf("create in %q = %d %v, want 400 invalid_field %q", tt.cwd, code, out, tt.want)
		}
	}
	_, list := ts.call(t, "GET", "/sessions?include_hidden=true", nil)
	if n := len(list["sessions"].([]any)); n != 3 {
		t.Errorf("%d sessions after the refusals, want 3", n)
	}
	for _, s := range list["sessions"].([]any) {
		if s.(map[string]any)["cwd"] == "" {
			t.Errorf("a listed session has no cwd: %v", s)
		}
	}
	_, list = ts.call(t, "GET", "/sessions?include_hidden=true&cwd="+url.QueryEscape(proj), nil)
	if n := len(list["sessions"].([]any)); n != 2 {
		t.Errorf("?cwd=%s lists %d sessions, want 2: %v", proj, n, list)
	}
	if code, out := ts.call(t, "GET", "/sessions?cwd=rel", nil); code != 400 || errCode(out) != "invalid_field" {
		t.Errorf("?cwd=rel = %d %v, want 400", code, out)
	}
}

// TestListShowsTheProjectEndOfADirectory: a row of the session list shows the last parts of
// a long directory (the project), with the whole path in its title and link.
func TestListShowsTheProjectEndOfADirectory(t *testing.T) {
	ts := newTestServer(t)
	dir := filepath.Join(t.TempDir(), "src", "github.com", "some-org", "the-project")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.mgr.Create(t.Context(), sessions.CreateOptions{Cwd: dir, Title: "In the project"}); err != nil {
		t.Fatal(err)
	}
	_, page := ts.do(t, "GET", "/profiles/default/", nil, nil)
	for _, want := range []string{`title="Sessions in ` + dir + `"`, ">…/some-org/the-project</a>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the list lacks %q:\n%s", want, page)
		}
	}
}
