package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRealPath(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "real", "sub"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "real", "f"), nil, 0o644))
	must(os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "abs")))
	must(os.Symlink("real/sub", filepath.Join(dir, "rel")))
	must(os.Symlink("../f", filepath.Join(dir, "real", "sub", "up")))
	must(os.Symlink(filepath.Join(dir, "real", "later"), filepath.Join(dir, "dangling")))
	must(os.Symlink("loop", filepath.Join(dir, "loop")))
	for _, tt := range []struct {
		name, path, want string
	}{
		{"plain", "real/f", "real/f"},
		{"absolute link", "abs/f", "real/f"},
		{"relative link", "rel", "real/sub"},
		{"link with ..", "rel/up", "real/f"},
		{"missing file under a link", "abs/new/deeper", "real/new/deeper"},
		{"dangling link", "dangling", "real/later"},
		{"under a dangling link", "dangling/x", "real/later/x"},
		{"missing", "nope/x", "nope/x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := realPath(filepath.Join(dir, tt.path))
			if want := filepath.Join(dir, tt.want); err != nil || got != want {
				t.Errorf("realPath(%s) = %q, %v, want %q", tt.path, got, err, want)
			}
		})
	}
	if _, err := realPath(filepath.Join(dir, "loop", "x")); err == nil || !strings.Contains(err.Error(), "too many levels of symbolic links") {
		t.Errorf("realPath of a loop = %v, want too many levels", err)
	}
}

// guardHome builds a myco home with a session, a config, a manual page and a workspace,
// and the guard the local tools use for it.
func guardHome(t *testing.T) (home, ws string, g *Guard) {
	t.Helper()
	root := t.TempDir()
	home = filepath.Join(root, "home")
	profile := filepath.Join(home, "profiles", "default")
	ws = filepath.Join(profile, "workspace")
	for _, d := range []string{ws, filepath.Join(profile, "session"), filepath.Join(profile, "manual")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, data := range map[string]string{
		filepath.Join(home, "config.toml"):                "secret = 1\n",
		filepath.Join(profile, "session", "s1.session"):   "history\n",
		filepath.Join(profile, "manual", "tools.md"):      "# Tools\n",
		filepath.Join(ws, "notes.md"):                     "notes\n",
		filepath.Join(home, "shot.png"):                   "\x89PNG\r\n\x1a\n0000000000",
		filepath.Join(ws, "ok.png"):                       "\x89PNG\r\n\x1a\n0000000000",
		filepath.Join(profile, "session", "attached.png"): "\x89PNG\r\n\x1a\n0000000000",
	} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home, ws, &Guard{Deny: []string{home}, Allow: []string{ws}, ReadOnly: []string{filepath.Join(profile, "manual")}}
}

func TestGuardEditor(t *testing.T) {
	home, ws, g := guardHome(t)
	profile := filepath.Join(home, "profiles", "default")
	out := t.TempDir()
	for link, target := range map[string]string{
		"config-link":   filepath.Join(home, "config.toml"),
		"session-dir":   filepath.Join(profile, "session"),
		"dangling":      filepath.Join(home, "new.toml"),
		"workspace-dir": ws,
	} {
		if err := os.Symlink(target, filepath.Join(out, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(home, "config.toml"), filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	e := NewEditor(EditorOptions{Guard: g})
	refused := "which holds myco's own files (sessions, configuration), not the agent's to view or change; the workspace " + ws + " is allowed"
	tests := []struct {
		name  string
		input map[string]any
		want  string // "" means allowed
	}{
		{"view the config", map[string]any{"command": "view", "path": filepath.Join(home, "config.toml")}, refused},
		{"view a session", map[string]any{"command": "view", "path": filepath.Join(profile, "session", "s1.session")}, refused},
		{"list the home", map[string]any{"command": "view", "path": home}, refused},
		{"create in the sessions", map[string]any{"command": "create", "path": filepath.Join(profile, "session", "x.session"), "file_text": "x"}, refused},
		{"create a new directory in the home", map[string]any{"command": "create", "path": filepath.Join(home, "new", "x"), "file_text": "x"}, refused},
		{"edit the config", map[string]any{"command": "str_replace", "path": filepath.Join(home, "config.toml"), "old_str": "1", "new_str": "2"}, refused},
		{"dot-dot out of the workspace", map[string]any{"command": "view", "path": ws + "/../../../config.toml"}, refused},
		{"dot-dot into the home", map[string]any{"command": "view", "path": out + "/../" + filepath.Base(filepath.Dir(home)) + "/home/config.toml"}, refused},
		{"symlink to the config", map[string]any{"command": "view", "path": filepath.Join(out, "config-link")}, filepath.Join(out, "config-link") + " resolves to " + filepath.Join(home, "config.toml")},
		{"symlink in the workspace to the config", map[string]any{"command": "view", "path": filepath.Join(ws, "escape")}, refused},
		{"new file under a symlinked directory", map[string]any{"command": "create", "path": filepath.Join(out, "session-dir", "x.session"), "file_text": "x"}, refused},
		{"create through a dangling symlink", map[string]any{"command": "create", "path": filepath.Join(out, "dangling"), "file_text": "x"}, refused},
		{"edit the manual", map[string]any{"command": "insert", "path": filepath.Join(profile, "manual", "tools.md"), "insert_line": 0, "insert_text": "x"}, "may view " + filepath.Join(profile, "manual", "tools.md") + " but not change it"},
		{"view the manual", map[string]any{"command": "view", "path": filepath.Join(profile, "manual", "tools.md")}, ""},
		{"view in the workspace", map[string]any{"command": "view", "path": filepath.Join(ws, "notes.md")}, ""},
		{"create in the workspace", map[string]any{"command": "create", "path": filepath.Join(ws, "sub", "new.md"), "file_text": "x"}, ""},
		{"create through a symlink to the workspace", map[string]any{"command": "create", "path": filepath.Join(out, "workspace-dir", "via-link.md"), "file_text": "x"}, ""},
		{"create outside the home", map[string]any{"command": "create", "path": filepath.Join(out, "free.md"), "file_text": "x"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, e, "o1", tt.input)
			if tt.want == "" {
				if res.IsError {
					t.Errorf("%v = %+v, want it allowed", tt.input, res)
				}
				return
			}
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Errorf("%v = %+v, want an error containing %q", tt.input, res, tt.want)
			}
		})
	}
	for _, p := range []string{filepath.Join(profile, "session", "x.session"), filepath.Join(home, "new"), filepath.Join(home, "new.toml")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	if got := readFile(t, filepath.Join(home, "config.toml")); got != "secret = 1\n" {
		t.Errorf("the config changed: %q", got)
	}
	// A listing around the home names it but does not show its contents.
	res := call(t, e, "o1", map[string]any{"command": "view", "path": filepath.Dir(home)})
	if res.IsError || !strings.Contains(res.Text, "home/ [not listed: myco's own files]\n") || strings.Contains(res.Text, "config.toml") || strings.Contains(res.Text, "profiles") {
		t.Errorf("listing of the home's parent = %q", res.Text)
	}
	if d := e.Spec().Description; !strings.Contains(d, "Paths in myco's own files ("+home+": sessions, configuration) are refused, symlinks resolved, except "+ws+"; ") {
		t.Errorf("the description does not tell the model about the guard: %q", d)
	}
	if d := NewEditor(EditorOptions{}).Spec().Description; strings.Contains(d, "myco's own files") {
		t.Errorf("the description without a guard mentions one: %q", d)
	}
	// No guard, no restriction.
	if res := call(t, NewEditor(EditorOptions{}), "o1", map[string]any{"command": "view", "path": filepath.Join(home, "config.toml")}); res.IsError {
		t.Errorf("view without a guard = %+v", res)
	}
}

// TestGuardHomeBehindSymlink: the home named through a symlink is guarded by its real
// location too.
func TestGuardHomeBehindSymlink(t *testing.T) {
	home, ws, _ := guardHome(t)
	link := filepath.Join(t.TempDir(), "myco-home")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	g := &Guard{Deny: []string{link}, Allow: []string{filepath.Join(link, "profiles", "default", "workspace")}}
	e := NewEditor(EditorOptions{Guard: g})
	if res := call(t, e, "o1", map[string]any{"command": "view", "path": filepath.Join(home, "config.toml")}); !res.IsError || !strings.Contains(res.Text, "myco's own files") {
		t.Errorf("view of the real config = %+v, want refused", res)
	}
	if res := call(t, e, "o1", map[string]any{"command": "view", "path": filepath.Join(ws, "notes.md")}); res.IsError {
		t.Errorf("view in the workspace = %+v", res)
	}
}

func TestGuardImage(t *testing.T) {
	home, ws, g := guardHome(t)
	link := filepath.Join(t.TempDir(), "innocent.png")
	if err := os.Symlink(filepath.Join(home, "shot.png"), link); err != nil {
		t.Fatal(err)
	}
	im := NewImage(ImageOptions{Guard: g})
	for _, tt := range []struct {
		path string
		ok   bool
	}{
		{filepath.Join(ws, "ok.png"), true},
		{filepath.Join(home, "shot.png"), false},
		{filepath.Join(home, "profiles", "default", "session", "attached.png"), false},
		{link, false},
		{ws + "/../session/attached.png", false},
	} {
		res := call(t, im, "o1", map[string]any{"path": tt.path})
		if tt.ok && (res.IsError || len(res.Images) != 1) {
			t.Errorf("view_image %s = %+v, want the image", tt.path, res)
		}
		if !tt.ok && (!res.IsError || len(res.Images) != 0 || !strings.Contains(res.Text, "view_image refuses") || !strings.Contains(res.Text, "the workspace "+ws+" is allowed")) {
			t.Errorf("view_image %s = %+v, want refused", tt.path, res)
		}
	}
}
