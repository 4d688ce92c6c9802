package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/internal/fakemodel"
)

// TestViewerResolvedPaths (issue 28): the viewer of a session's directory rules on the
// path with its symlinks resolved: envlink -> .env, gitdir -> .git and sshdir -> .ssh are
// neither listed nor shown (as a page or raw), and an answer's link to a hidden name is
// not made a viewer link (one through a symlink, which the renderer cannot see, is
// answered 404 by the viewer). A session working in /, in the user's home or inside myco's own
// directory gets a viewer that says why it does not browse there, and one working above
// myco's directory is shown everything but it.
func TestViewerResolvedPaths(t *testing.T) {
	fake := fakemodel.New(t,
		fakemodel.Turn{Text: "See [the env](.env), [the config](gitdir/config), [the readme](README.md) and [the token](.git/config)."},
		fakemodel.Turn{Text: "ok"})
	top := t.TempDir()
	home := filepath.Join(top, "mycohome") // MYCO_HOME, not hidden, inside a directory a session works in
	userHome := t.TempDir()
	proj := filepath.Join(top, "proj")
	if err := os.Rename(profileHome(t, "anthropic-messages", fake.URL, ""), home); err != nil {
		t.Fatal(err)
	}
	for p, text := range map[string]string{
		filepath.Join(proj, "README.md"):              "# Readme\n",
		filepath.Join(proj, ".env"):                   "API_TOKEN=SECRET-ENV\n",
		filepath.Join(proj, ".git", "config"):         "[remote]\nurl = https://x:SECRET-GIT@example.invalid/\n",
		filepath.Join(proj, ".ssh", "id_ed25519"):     "SECRET-KEY\n",
		filepath.Join(userHome, "notes.txt"):          "home notes\n",
		filepath.Join(home, "profiles", "x", "a.txt"): "not a profile\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"envlink": ".env", "gitdir": ".git", "sshdir": ".ssh", "readme-link.md": "README.md"} {
		if err := os.Symlink(target, filepath.Join(proj, link)); err != nil {
			t.Fatal(err)
		}
	}
	_, u, stderr := startServerEnv(t, home, []string{"HOME=" + userHome})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr)
		}
	})
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	create := func(req, cwd string) string {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"request_id": req, "cwd": cwd})
		code, out := c.post("/sessions", string(body))
		if code != 201 {
			t.Fatalf("create in %s = %d %v", cwd, code, out)
		}
		return out["session_id"].(string)
	}

	id := create("p", proj)
	files := u + "s/" + id + "/files/"
	code, listing := boundedGet(t, files)
	if code != 200 || !strings.Contains(listing, "README.md") || !strings.Contains(listing, "readme-link.md") {
		t.Fatalf("the listing = %d, want README.md and readme-link.md:\n%s", code, listing)
	}
	for _, name := range []string{"envlink", "gitdir", "sshdir"} {
		if strings.Contains(listing, name) {
			t.Errorf("the listing shows %s, a link to a hidden name", name)
		}
	}
	for _, p := range []string{"envlink", "envlink?raw=1", "gitdir/config", "gitdir/config?raw=1", "gitdir/", "sshdir/id_ed25519?raw=1", "sshdir/"} {
		code, body := boundedGet(t, files+p)
		if code != 404 || strings.Contains(body, "SECRET") {
			t.Errorf("GET files/%s = %d, want 404 and no secret", p, code)
		}
	}
	if code, body := boundedGet(t, files+"readme-link.md?raw=1"); code != 200 || body != "# Readme\n" {
		t.Errorf("GET files/readme-link.md?raw=1 = %d %q, want the readme: a link to a visible file is shown", code, body)
	}
	if code, out := c.post("/sessions/"+id+"/actions", `{"request_id":"s","action":"submit","text":"where?"}`); code != 200 {
		t.Fatalf("submit = %d %v", code, out)
	}
	c.wait(id)
	_, pg := boundedGet(t, u+"s/"+id+"/")
	if !strings.Contains(pg, `href="/profiles/default/s/`+id+`/files/README.md"`) {
		t.Errorf("the answer's link to README.md is not a viewer link")
	}
	for _, hidden := range []string{"files/.env", "files/.git"} {
		if strings.Contains(pg, hidden) {
			t.Errorf("the page links %s", hidden)
		}
	}

	for i, tt := range []struct{ dir, says string }{
		{"/", "the root of the file system"},
		{userHome, "your home directory"},
		{filepath.Join(home, "profiles", "default"), "(MYCO_HOME)"},
	} {
		id := create(fmt.Sprint("d", i), tt.dir)
		for _, p := range []string{"", "etc/passwd", "notes.txt", "config.toml?raw=1"} {
			code, body := boundedGet(t, u+"s/"+id+"/files/"+p)
			if code != 403 || !strings.Contains(body, tt.says) {
				t.Errorf("the viewer of a session in %s at %q = %d, want 403 saying %q", tt.dir, p, code, tt.says)
			}
			if strings.Contains(body, "home notes") || strings.Contains(body, "protocol") {
				t.Errorf("the viewer of a session in %s at %q shows a file", tt.dir, p)
			}
		}
	}

	id = create("top", top)
	code, listing = boundedGet(t, u+"s/"+id+"/files/")
	if code != 200 || !strings.Contains(listing, "proj") || strings.Contains(listing, "mycohome") {
		t.Errorf("the listing of a directory holding MYCO_HOME = %d, want proj and no mycohome:\n%s", code, listing)
	}
	for _, p := range []string{"mycohome/", "mycohome/profiles/default/config.toml?raw=1", "mycohome/profiles/x/a.txt"} {
		if code, body := boundedGet(t, u+"s/"+id+"/files/"+p); code != 404 || strings.Contains(body, "protocol") || strings.Contains(body, "not a profile") {
			t.Errorf("GET files/%s above MYCO_HOME = %d, want 404", p, code)
		}
	}
}
