package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/internal/needs"
)

// callIn calls tool for owner with the session directory dir on the call's context.
func callIn(t *testing.T, tool Tool, owner, dir string, input any) Result {
	t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Call(WithWorkDir(t.Context(), dir), owner, b)
}

// TestBashStartsInTheSessionDirectory: exec and start begin in the call's session
// directory, a cd lasts for one exec only, and PWD says where the shell is.
func TestBashStartsInTheSessionDirectory(t *testing.T) {
	needs.Proc(t)
	proj, other, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	t.Chdir(cwd)
	b := newTestBash(t, BashOptions{Env: []string{"PATH=" + os.Getenv("PATH"), "PWD=" + cwd}})
	for _, tt := range []struct {
		name, dir, command, want string
	}{
		{"no directory: the host process's", "", "pwd", cwd + "\n"},
		{"the session's directory", proj, "pwd; /bin/pwd; echo $PWD", proj + "\n" + proj + "\n" + proj + "\n"},
		{"a cd lasts for its call", proj, "cd " + other + " && pwd", other + "\n"},
		{"and no longer", proj, "pwd", proj + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := callIn(t, b, "o1", tt.dir, map[string]any{"command": tt.command})
			if res.IsError || res.Text != tt.want+"[exit status 0]" {
				t.Errorf("exec %q in %q = %+v, want %q", tt.command, tt.dir, res, tt.want)
			}
		})
	}
	res := callIn(t, b, "o1", proj, map[string]any{"action": "start", "command": "pwd; sleep 30"})
	if res.IsError || !strings.Contains(res.Text, proj+"\n") {
		t.Errorf("start pwd in %s = %+v", proj, res)
	}
	if dir, _, ok := b.WorkDir("o1"); !ok || dir != proj {
		t.Errorf("WorkDir after a start in %s = %q, %v", proj, dir, ok)
	}
}

// TestBashSessionDirectoryGone: a call in a directory removed since fails, names it, and
// runs nothing.
func TestBashSessionDirectoryGone(t *testing.T) {
	gone := filepath.Join(t.TempDir(), "proj")
	file := filepath.Join(t.TempDir(), "f")
	writeFile(t, file, "x")
	b := newTestBash(t, BashOptions{})
	for _, dir := range []string{gone, file} {
		for _, action := range []string{"exec", "start"} {
			res := callIn(t, b, "o1", dir, map[string]any{"action": action, "command": "touch ran"})
			if !res.IsError || !strings.Contains(res.Text, "the session's directory "+dir) || !strings.Contains(res.Text, "nothing was run") {
				t.Errorf("%s in %s = %+v, want a refusal that names it", action, dir, res)
			}
		}
	}
}

// TestRelativePathsInTheSessionDirectory: without a running bash session, view_image and
// the editor's hint resolve a relative path against the session's directory; a running
// session's own directory still comes first.
func TestRelativePathsInTheSessionDirectory(t *testing.T) {
	needs.Proc(t)
	proj, work, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(proj, "shot.png"), string(tinyPNG))
	t.Chdir(cwd)
	b := newTestBash(t, BashOptions{})
	im := NewImage(ImageOptions{Dirs: b})
	e := NewEditor(EditorOptions{Dirs: b})
	res := callIn(t, im, "o1", proj, map[string]any{"path": "shot.png"})
	if want := filepath.Join(proj, "shot.png") + ` ("shot.png" resolved against the session's directory`; res.IsError || len(res.Images) != 1 || !strings.HasPrefix(res.Text, want) {
		t.Errorf("view shot.png in %s = %+v, want the image and %q", proj, res, want)
	}
	res = callIn(t, e, "o1", proj, map[string]any{"command": "view", "path": "main.go"})
	if want := "Use " + filepath.Join(proj, "main.go") + ` ("main.go" resolved against the session's directory`; !res.IsError || !strings.Contains(res.Text, want) {
		t.Errorf("editor view main.go in %s = %+v, want %q", proj, res, want)
	}
	sessionIn(t, b, "o1", work)
	res = callIn(t, e, "o1", proj, map[string]any{"command": "view", "path": "main.go"})
	if want := "Use " + filepath.Join(work, "main.go") + ` ("main.go" resolved against the current directory of bash session b1`; !res.IsError || !strings.Contains(res.Text, want) {
		t.Errorf("editor view main.go with a session in %s = %+v, want %q", work, res, want)
	}
}

func TestWorkDirFrom(t *testing.T) {
	if _, ok := WorkDirFrom(context.Background()); ok {
		t.Error("a bare context carries a directory")
	}
	if _, ok := WorkDirFrom(WithWorkDir(context.Background(), "")); ok {
		t.Error("an empty directory counts")
	}
	if d, ok := WorkDirFrom(WithWorkDir(context.Background(), "/p")); !ok || d != "/p" {
		t.Errorf("WorkDirFrom = %q, %v", d, ok)
	}
}
