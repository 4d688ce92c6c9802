package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEditorViewAndEdit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	os.WriteFile(path, []byte("one\ntwo\nthree\n"), 0o640)
	e := NewEditor(EditorOptions{})

	res := call(t, e, "o1", map[string]any{"command": "str_replace", "path": path, "old_str": "two", "new_str": "2"})
	if !res.IsError || !strings.Contains(res.Text, "has not been viewed") {
		t.Fatalf("edit before view = %+v", res)
	}
	res = call(t, e, "o1", map[string]any{"command": "view", "path": path})
	if res.Text != "     1\tone\n     2\ttwo\n     3\tthree\n" {
		t.Fatalf("view = %q", res.Text)
	}
	res = call(t, e, "o1", map[string]any{"command": "view", "path": path, "view_range": []int{2, -1}})
	if res.Text != "     2\ttwo\n     3\tthree\n" {
		t.Fatalf("view_range = %q", res.Text)
	}
	// another owner's view does not authorize o2
	if res := call(t, e, "o2", map[string]any{"command": "insert", "path": path, "insert_line": 0, "insert_text": "x"}); !res.IsError {
		t.Fatalf("o2 edited without viewing: %+v", res)
	}
	res = call(t, e, "o1", map[string]any{"command": "str_replace", "path": path, "old_str": "two", "new_str": "2"})
	if res.IsError {
		t.Fatalf("str_replace = %+v", res)
	}
	// the edit refreshed the stamp: a second edit needs no new view
	res = call(t, e, "o1", map[string]any{"command": "insert", "path": path, "insert_line": 1, "insert_text": "one and a half"})
	if res.IsError {
		t.Fatalf("insert = %+v", res)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "one\none and a half\n2\nthree\n" {
		t.Fatalf("file = %q", got)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640 kept", info.Mode().Perm())
	}
	// an outside change invalidates the stamp
	os.WriteFile(path, []byte("changed\n"), 0o640)
	res = call(t, e, "o1", map[string]any{"command": "str_replace", "path": path, "old_str": "changed", "new_str": "x"})
	if !res.IsError || !strings.Contains(res.Text, "changed since it was last viewed") {
		t.Fatalf("edit after an outside change = %+v", res)
	}
	inv := e.Inventory("o1").([]Fingerprint)
	if len(inv) != 1 || inv[0].Path != path {
		t.Errorf("inventory = %+v", inv)
	}
}

func TestEditorReplaceCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.txt")
	os.WriteFile(path, []byte("x y x\n"), 0o644)
	e := NewEditor(EditorOptions{})
	call(t, e, "o1", map[string]any{"command": "view", "path": path})
	for _, tt := range []struct{ old, want string }{{"z", "does not occur"}, {"x", "occurs 2 times"}} {
		res := call(t, e, "o1", map[string]any{"command": "str_replace", "path": path, "old_str": tt.old, "new_str": "q"})
		if !res.IsError || !strings.Contains(res.Text, tt.want) {
			t.Errorf("str_replace %q = %+v, want %q", tt.old, res, tt.want)
		}
	}
	if got, _ := os.ReadFile(path); string(got) != "x y x\n" {
		t.Errorf("a rejected replace changed the file: %q", got)
	}
}

func TestEditorViewCap(t *testing.T) {
	dir := t.TempDir()
	e := NewEditor(EditorOptions{MaxView: 1000})
	for name, content := range map[string]string{
		"many-lines": strings.Repeat("line\n", 300),
		"long-line":  strings.Repeat("x", 2000) + "\n",
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(content), 0o644)
		res := call(t, e, "o1", map[string]any{"command": "view", "path": path})
		if !res.IsError || !strings.Contains(res.Text, "1000 bytes") || !strings.Contains(res.Text, "smaller") {
			t.Errorf("%s: view = %q, want a cap error naming the sizes", name, res.Text)
		}
		// a rejected view authorizes nothing
		res = call(t, e, "o1", map[string]any{"command": "insert", "path": path, "insert_line": 0, "insert_text": "x"})
		if !res.IsError || !strings.Contains(res.Text, "has not been viewed") {
			t.Errorf("%s: edit after a rejected view = %+v", name, res)
		}
	}
	// a small range of the big file is fine
	res := call(t, e, "o1", map[string]any{"command": "view", "path": filepath.Join(dir, "many-lines"), "view_range": []int{1, 3}})
	if res.IsError {
		t.Errorf("small range = %+v", res)
	}
}

func TestEditorCreateAndList(t *testing.T) {
	dir := t.TempDir()
	e := NewEditor(EditorOptions{})
	path := filepath.Join(dir, "sub", "new.go")
	if res := call(t, e, "o1", map[string]any{"command": "create", "path": path, "file_text": "package x\n"}); res.IsError {
		t.Fatalf("create = %+v", res)
	}
	os.WriteFile(filepath.Join(dir, "existing"), []byte("keep"), 0o644)
	res := call(t, e, "o1", map[string]any{"command": "create", "path": filepath.Join(dir, "existing"), "file_text": "lost"})
	if !res.IsError {
		t.Fatalf("create over an unviewed file = %+v", res)
	}
	os.WriteFile(filepath.Join(dir, ".hidden"), nil, 0o644)
	res = call(t, e, "o1", map[string]any{"command": "view", "path": dir})
	if !strings.Contains(res.Text, "sub/\n") || !strings.Contains(res.Text, "sub/new.go") || strings.Contains(res.Text, ".hidden") {
		t.Errorf("listing = %q", res.Text)
	}
	for _, in := range []map[string]any{
		{"command": "view", "path": "relative.txt"},
		{"command": "view", "path": path, "bogus": 1},
		{"command": "frobnicate", "path": path},
	} {
		if res := call(t, e, "o1", in); !res.IsError {
			t.Errorf("%v accepted: %+v", in, res)
		}
	}
}
