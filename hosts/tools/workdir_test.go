package tools

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/internal/needs"
)

// sessionIn starts an interactive shell for owner and moves it to dir, waiting until the
// shell says it is there; it returns the session id.
func sessionIn(t *testing.T, b *Bash, owner, dir string) string {
	t.Helper()
	res := call(t, b, owner, map[string]any{"action": "start", "command": "bash --noprofile --norc"})
	id, ok := strings.CutPrefix(strings.SplitN(res.Text, "\n", 2)[0], "session_id: ")
	if res.IsError || !ok {
		t.Fatalf("start = %+v", res)
	}
	cd(t, b, owner, id, dir)
	return id
}

// cd moves owner's session id to dir, waiting until the shell says it is there.
func cd(t *testing.T, b *Bash, owner, id, dir string) {
	t.Helper()
	res := call(t, b, owner, map[string]any{"action": "write", "session_id": id, "input": "cd '" + dir + "' && echo moved-there"})
	for text := res.Text; !strings.Contains(text, "moved-there"); text += res.Text {
		res = call(t, b, owner, map[string]any{"action": "read", "session_id": id, "timeout_secs": 10})
		if res.IsError || strings.Contains(res.Text, "[no new output]") {
			t.Fatalf("cd %s in %s: %q", dir, id, text+res.Text)
		}
	}
}

func TestBashWorkDir(t *testing.T) {
	needs.Proc(t)
	b := newTestBash(t, BashOptions{})
	if _, _, ok := b.WorkDir("o1"); ok {
		t.Fatal("WorkDir of an owner without sessions reports one")
	}
	d1, d2, d3 := t.TempDir(), t.TempDir(), t.TempDir()
	b1 := sessionIn(t, b, "o1", d1)
	want := func(dir, from string) {
		t.Helper()
		got, gotFrom, ok := b.WorkDir("o1")
		if !ok || got != dir || gotFrom != from {
			t.Errorf("WorkDir = %q, %q, %v; want %q, %q", got, gotFrom, ok, dir, from)
		}
	}
	want(d1, "the current directory of bash session b1")
	b2 := sessionIn(t, b, "o1", d2)
	want(d2, "the current directory of bash session b2") // the most recently used
	cd(t, b, "o1", b1, d3)
	want(d3, "the current directory of bash session b1")
	call(t, b, "o1", map[string]any{"action": "read", "session_id": b2})
	want(d2, "the current directory of bash session b2") // a read is a use
	call(t, b, "o1", map[string]any{"action": "write", "session_id": b2, "input": "exit"})
	for res := call(t, b, "o1", map[string]any{"action": "read", "session_id": b2, "timeout_secs": 10}); !strings.Contains(res.Text, "exited"); {
		res = call(t, b, "o1", map[string]any{"action": "read", "session_id": b2, "timeout_secs": 10})
		if strings.Contains(res.Text, "[no new output]") && !strings.Contains(res.Text, "exited") {
			t.Fatalf("b2 did not exit: %q", res.Text)
		}
	}
	want(d3, "the current directory of bash session b1") // an exited session has no directory
	if _, _, ok := b.WorkDir("o2"); ok {
		t.Error("another owner sees o1's session directory")
	}
	call(t, b, "o1", map[string]any{"action": "kill", "session_id": b1})
	if _, _, ok := b.WorkDir("o1"); ok {
		t.Error("WorkDir after every session ended reports one")
	}
}

func TestViewImageRelative(t *testing.T) {
	needs.Proc(t)
	home := t.TempDir()
	work, denied, cwd := filepath.Join(home, "work"), filepath.Join(home, "myco"), t.TempDir()
	for _, f := range []string{filepath.Join(work, "shot.png"), filepath.Join(work, "sub", "deep.png"), filepath.Join(denied, "secret.png"), filepath.Join(cwd, "here.png")} {
		os.MkdirAll(filepath.Dir(f), 0o755)
		writeFile(t, f, string(tinyPNG))
	}
	os.Symlink(denied, filepath.Join(work, "link"))
	t.Chdir(cwd)
	b := newTestBash(t, BashOptions{})
	im := NewImage(ImageOptions{Dirs: b, Guard: &Guard{Deny: []string{denied}}})

	// No session: the host process's working directory.
	res := call(t, im, "o1", map[string]any{"path": "here.png"})
	if want := filepath.Join(cwd, "here.png") + ` ("here.png" resolved against the host process's working directory`; res.IsError || len(res.Images) != 1 || !strings.HasPrefix(res.Text, want) {
		t.Errorf("view here.png without a session = %+v, want the image and %q", res, want)
	}

	sessionIn(t, b, "o1", work)
	note := func(rel string) string {
		return `("` + rel + `" resolved against the current directory of bash session b1, ` + work + ")"
	}
	for _, tt := range []struct {
		name, path, want string
		ok               bool
	}{
		{"in the session's directory", "shot.png", filepath.Join(work, "shot.png") + " " + note("shot.png") + ": image/png", true},
		{"dot segments", "./sub/../sub/deep.png", filepath.Join(work, "sub", "deep.png") + " " + note("./sub/../sub/deep.png") + ": image/png", true},
		{"missing", "nope.png", filepath.Join(work, "nope.png") + " " + note("nope.png") + " does not exist", false},
		{"up into the denied directory", "../myco/secret.png", "view_image refuses " + filepath.Join(denied, "secret.png") + ": it is inside " + denied, false},
		{"through a symlink", "link/secret.png", "view_image refuses " + filepath.Join(denied, "secret.png") + " (" + filepath.Join(work, "link", "secret.png") + " resolves to", false},
		{"hostile name", "a\nb\x1b[2J.png", filepath.Join(work, "a\nb\x1b[2J.png") + ` ("a\nb\x1b[2J.png" resolved against`, false},
		{"not an image", "sub", filepath.Join(work, "sub") + " is a directory", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, im, "o1", map[string]any{"path": tt.path})
			if res.IsError == tt.ok || !strings.Contains(res.Text, tt.want) || (len(res.Images) == 1) != tt.ok {
				t.Errorf("view %q = %+v, want ok %v and %q", tt.path, res, tt.ok, tt.want)
			}
		})
	}
	// Another owner has no session here: its relative paths mean the host's directory.
	if res := call(t, im, "o2", map[string]any{"path": "shot.png"}); !res.IsError || !strings.Contains(res.Text, filepath.Join(cwd, "shot.png")) {
		t.Errorf("o2 view shot.png = %+v, want %s tried", res, filepath.Join(cwd, "shot.png"))
	}
}

func TestEditorRelativePathHint(t *testing.T) {
	needs.Proc(t)
	work, cwd := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(work, "main.go"), "package main\n")
	t.Chdir(cwd)
	b := newTestBash(t, BashOptions{})
	e := NewEditor(EditorOptions{Dirs: b})
	for _, tt := range []struct {
		name, owner, command, path, want string
		gone                             bool
	}{
		{"no session", "o1", "view", "main.go", filepath.Join(cwd, "main.go") + ` ("main.go" resolved against the host process's working directory`, true},
		{"in the session's directory", "o2", "view", "main.go", "Use " + filepath.Join(work, "main.go") + ` ("main.go" resolved against the current directory of bash session b1, ` + work + ")", false},
		{"a file to create", "o2", "create", "new.go", "Use " + filepath.Join(work, "new.go") + " (", false},
		{"a missing file to edit", "o2", "str_replace", "old.go", "Use " + filepath.Join(work, "old.go") + " (", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.owner == "o2" {
				if _, _, ok := b.WorkDir("o2"); !ok {
					sessionIn(t, b, "o2", work)
				}
			}
			in := map[string]any{"command": tt.command, "path": tt.path}
			switch tt.command {
			case "create":
				in["file_text"] = "x"
			case "str_replace":
				in["old_str"], in["new_str"] = "a", "b"
			}
			res := call(t, e, tt.owner, in)
			if !res.IsError || !strings.HasPrefix(res.Text, `path "`+tt.path+`" is not absolute; str_replace_based_edit_tool takes absolute paths only.`) ||
				!strings.Contains(res.Text, tt.want) || strings.HasSuffix(res.Text, ", which does not exist") != tt.gone {
				t.Errorf("%s %q = %+v, want a refusal with %q (does not exist: %v)", tt.command, tt.path, res, tt.want, tt.gone)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(work, "new.go")); err == nil {
		t.Error("a refused create wrote the file")
	}
}

// tinyPNG is a 1x1 PNG.
var tinyPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
