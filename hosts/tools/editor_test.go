package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o640); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEditorView(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	writeFile(t, path, "one\ntwo\nthree\n")
	noEOL := filepath.Join(dir, "b.txt")
	writeFile(t, noEOL, "x\ny")
	empty := filepath.Join(dir, "empty")
	writeFile(t, empty, "")
	bin := filepath.Join(dir, "bin")
	writeFile(t, bin, "\x89PNG\r\n\x1a\n\x00\x00")
	e := NewEditor(EditorOptions{})
	tests := []struct {
		name    string
		input   map[string]any
		want    string
		isError bool
	}{
		{"numbered like cat -n", map[string]any{"path": path}, "     1\tone\n     2\ttwo\n     3\tthree\n", false},
		{"no final newline", map[string]any{"path": noEOL}, "     1\tx\n     2\ty\n", false},
		{"range to EOF", map[string]any{"path": path, "view_range": []int{2, -1}}, "     2\ttwo\n     3\tthree\n", false},
		{"range", map[string]any{"path": path, "view_range": []int{2, 2}}, "     2\ttwo\n", false},
		{"range end past EOF is clamped", map[string]any{"path": path, "view_range": []int{3, 10}}, "     3\tthree\n", false},
		{"range start past EOF", map[string]any{"path": path, "view_range": []int{4, 5}}, "view_range [4, 5] is outside " + path + ", which has 3 lines", true},
		{"range backwards", map[string]any{"path": path, "view_range": []int{3, 2}}, "is outside", true},
		{"range of three", map[string]any{"path": path, "view_range": []int{1, 2, 3}}, "view_range must be [start, end]", true},
		{"empty file", map[string]any{"path": empty}, "[" + empty + " is empty]", false},
		{"binary", map[string]any{"path": bin}, "is a binary file (10 bytes); it is an image: use view_image", true},
		{"relative path", map[string]any{"path": "a.txt"}, `path "a.txt" is not absolute`, true},
		{"missing", map[string]any{"path": filepath.Join(dir, "nope")}, "no such file", true},
		{"field of another command", map[string]any{"path": path, "old_str": "x"}, "command=view does not take old_str", true},
		{"unknown field", map[string]any{"path": path, "line": 3}, `unknown field "line"; the accepted fields are: command, path, view_range`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.input["command"] = "view"
			res := call(t, e, "o1", tt.input)
			if res.IsError != tt.isError || !strings.Contains(res.Text, tt.want) {
				t.Errorf("view %v = %+v, want %q (IsError %v)", tt.input, res, tt.want, tt.isError)
			}
			if !tt.isError && res.Text != tt.want {
				t.Errorf("view %v = %q, want exactly %q", tt.input, res.Text, tt.want)
			}
		})
	}
}

func TestEditorViewDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"src/pkg/deep/x.go", "src/main.go", "README.md", ".git/config", "src/.hidden"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		writeFile(t, filepath.Join(dir, p), "x")
	}
	res := call(t, NewEditor(EditorOptions{}), "o1", map[string]any{"command": "view", "path": dir})
	want := dir + ", two levels deep, hidden entries skipped:\nREADME.md\nsrc/\nsrc/main.go\nsrc/pkg/\n"
	if res.IsError || res.Text != want {
		t.Errorf("view of a directory = %q, want %q", res.Text, want)
	}
	if res := call(t, NewEditor(EditorOptions{}), "o1", map[string]any{"command": "view", "path": dir, "view_range": []int{1, 2}}); !res.IsError {
		t.Errorf("view_range on a directory = %+v, want an error", res)
	}
	if res := call(t, NewEditor(EditorOptions{MaxView: 40}), "o1", map[string]any{"command": "view", "path": dir}); !res.IsError || !strings.Contains(res.Text, "bytes, over the 40-byte view limit") {
		t.Errorf("oversized listing = %+v", res)
	}
}

func TestEditorViewCap(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, "long-line")
	writeFile(t, long, strings.Repeat("x", 300<<10)+"\n") // one line over 256 KiB
	many := filepath.Join(dir, "many-lines")
	writeFile(t, many, strings.Repeat("abcdefghijklmnopqrstuvwxyz\n", 10000)) // 270,000 bytes viewed as 340,000
	e := NewEditor(EditorOptions{})
	tests := []struct {
		name, path string
		vr         []int
		want       string
	}{
		{"one long line", long, nil, fmt.Sprintf("would print %d bytes, over the 262144-byte view limit", 300<<10+8)},
		{"one long line in a range", long, []int{1, 1}, "over the 262144-byte view limit"},
		{"many lines", many, nil, "would print 340000 bytes, over the 262144-byte view limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := map[string]any{"command": "view", "path": tt.path}
			if tt.vr != nil {
				in["view_range"] = tt.vr
			}
			res := call(t, e, "o1", in)
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Fatalf("view = %q, want a cap error containing %q", res.Text, tt.want)
			}
			// a rejected view authorizes nothing
			res = call(t, e, "o1", map[string]any{"command": "insert", "path": tt.path, "insert_line": 0, "insert_text": "y"})
			if !res.IsError || !strings.Contains(res.Text, "has not been viewed") {
				t.Fatalf("insert after a rejected view = %+v, want refused", res)
			}
		})
	}
	if res := call(t, e, "o1", map[string]any{"command": "view", "path": many, "view_range": []int{1, 100}}); res.IsError {
		t.Errorf("a small range of a big file = %+v", res)
	}
}

func TestEditorStamps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	writeFile(t, path, "one\ntwo\nthree\n")
	e := NewEditor(EditorOptions{})
	replace := func(owner, old, new string) Result {
		return call(t, e, owner, map[string]any{"command": "str_replace", "path": path, "old_str": old, "new_str": new})
	}
	if res := replace("o1", "two", "2"); !res.IsError || !strings.Contains(res.Text, "has not been viewed in this session; view it (command=view) before editing it") {
		t.Fatalf("edit before view = %+v", res)
	}
	call(t, e, "o1", map[string]any{"command": "view", "path": path, "view_range": []int{1, 1}}) // a range view stamps the file
	if res := replace("o2", "two", "2"); !res.IsError || !strings.Contains(res.Text, "has not been viewed") {
		t.Fatalf("o2 edited after only o1 viewed: %+v", res)
	}
	if res := replace("o1", "two", "2"); res.IsError || !strings.Contains(res.Text, "replaced 1 occurrence at line 2\n     1\tone\n     2\t2\n     3\tthree\n") {
		t.Fatalf("str_replace = %+v", res)
	}
	// the edit refreshed the stamp: a second edit needs no new view
	if res := replace("o1", "three\n", ""); res.IsError {
		t.Fatalf("second str_replace = %+v", res)
	}
	if got := readFile(t, path); got != "one\n2\n" {
		t.Fatalf("file = %q", got)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640 kept", info.Mode().Perm())
	}
	inv := e.Stamps("o1")
	if real, _ := filepath.EvalSymlinks(path); len(inv) != 1 || inv[0].Path != real || inv[0].Size != 6 || len(inv[0].SHA256) != 64 {
		t.Errorf("inventory = %+v", inv)
	}

	tests := []struct {
		name   string
		change func()
	}{
		{"content", func() { writeFile(t, path, "changed\n") }},
		{"mtime only", func() {
			future := time.Now().Add(time.Hour)
			os.Chtimes(path, future, future)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call(t, e, "o1", map[string]any{"command": "view", "path": path})
			tt.change()
			if res := replace("o1", "one", "1"); !res.IsError || !strings.Contains(res.Text, "changed since it was last viewed") || !strings.Contains(res.Text, "view it again") {
				t.Fatalf("edit after an outside change = %+v", res)
			}
		})
	}
	e.Release("o1")
	if got := e.Stamps("o1"); len(got) != 0 {
		t.Errorf("Stamps after Release = %+v", got)
	}
	if res := replace("o1", "changed", "x"); !res.IsError || !strings.Contains(res.Text, "has not been viewed") {
		t.Errorf("edit after Release = %+v", res)
	}
}

func TestEditorReplaceMatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, path, "x = 1\ny = 2\nx = 1\n")
	e := NewEditor(EditorOptions{})
	call(t, e, "o1", map[string]any{"command": "view", "path": path})
	tests := []struct {
		old, want string
	}{
		{"z = 3", "old_str was not found in " + path + " (0 matches); nothing was changed"},
		{"x = 1", "old_str matches 2 times in " + path + " on lines 1, 3; nothing was changed. Include more surrounding lines"},
		{"x = 1\nx", "old_str was not found"},
		{"", "command=str_replace needs old_str"},
	}
	for _, tt := range tests {
		res := call(t, e, "o1", map[string]any{"command": "str_replace", "path": path, "old_str": tt.old, "new_str": "q"})
		if !res.IsError || !strings.Contains(res.Text, tt.want) {
			t.Errorf("str_replace %q = %+v, want %q", tt.old, res, tt.want)
		}
	}
	if got := readFile(t, path); got != "x = 1\ny = 2\nx = 1\n" {
		t.Errorf("file changed by failed replacements: %q", got)
	}
	// new_str omitted deletes
	if res := call(t, e, "o1", map[string]any{"command": "str_replace", "path": path, "old_str": "y = 2\n"}); res.IsError {
		t.Fatalf("delete = %+v", res)
	}
	if got := readFile(t, path); got != "x = 1\nx = 1\n" {
		t.Errorf("after delete = %q", got)
	}
}

func TestEditorInsert(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file string
		line       int
		text, want string
		isError    bool
	}{
		{"top", "a\nb\n", 0, "new", "new\na\nb\n", false},
		{"middle", "a\nb\n", 1, "new\n", "a\nnew\nb\n", false},
		{"end", "a\nb\n", 2, "new", "a\nb\nnew\n", false},
		{"end without final newline", "a\nb", 2, "new", "a\nb\nnew\n", false},
		{"several lines", "a\n", 1, "x\ny", "a\nx\ny\n", false},
		{"past the end", "a\n", 2, "x", "a\n", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprint(i))
			writeFile(t, path, tt.file)
			e := NewEditor(EditorOptions{})
			call(t, e, "o1", map[string]any{"command": "view", "path": path})
			res := call(t, e, "o1", map[string]any{"command": "insert", "path": path, "insert_line": tt.line, "insert_text": tt.text})
			if res.IsError != tt.isError {
				t.Fatalf("insert = %+v, want IsError %v", res, tt.isError)
			}
			if got := readFile(t, path); got != tt.want {
				t.Errorf("file = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEditorCreate(t *testing.T) {
	dir := t.TempDir()
	e := NewEditor(EditorOptions{})
	path := filepath.Join(dir, "new", "sub", "f.txt")
	res := call(t, e, "o1", map[string]any{"command": "create", "path": path, "file_text": "hello\n"})
	if res.IsError || res.Text != "created "+path+" (6 bytes, 1 lines)" {
		t.Fatalf("create = %+v", res)
	}
	if got := readFile(t, path); got != "hello\n" {
		t.Errorf("created file = %q", got)
	}
	// create stamps what it wrote: the creator may edit it at once
	if res := call(t, e, "o1", map[string]any{"command": "str_replace", "path": path, "old_str": "hello", "new_str": "bye"}); res.IsError {
		t.Errorf("edit after create = %+v", res)
	}
	existing := filepath.Join(dir, "existing")
	writeFile(t, existing, "old\n")
	if res := call(t, e, "o1", map[string]any{"command": "create", "path": existing, "file_text": "new\n"}); !res.IsError || !strings.Contains(res.Text, "exists and create would overwrite it") {
		t.Fatalf("create over an unviewed file = %+v", res)
	}
	call(t, e, "o1", map[string]any{"command": "view", "path": existing})
	if res := call(t, e, "o1", map[string]any{"command": "create", "path": existing, "file_text": "new\n"}); res.IsError || !strings.HasPrefix(res.Text, "overwrote") {
		t.Fatalf("create over a viewed file = %+v", res)
	}
	if info, _ := os.Stat(existing); info.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640 kept", info.Mode().Perm())
	}
	if res := call(t, e, "o1", map[string]any{"command": "create", "path": dir, "file_text": "x"}); !res.IsError || !strings.Contains(res.Text, "is a directory") {
		t.Errorf("create over a directory = %+v", res)
	}
	if res := call(t, e, "o1", map[string]any{"command": "create", "path": filepath.Join(dir, "x")}); !res.IsError || !strings.Contains(res.Text, "needs file_text") {
		t.Errorf("create without file_text = %+v", res)
	}
	entries, _ := os.ReadDir(dir)
	for _, d := range entries {
		if strings.Contains(d.Name(), ".myco-") {
			t.Errorf("temporary file %s left behind", d.Name())
		}
	}
}

func TestEditorEditsThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	writeFile(t, target, "a\n")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	e := NewEditor(EditorOptions{})
	call(t, e, "o1", map[string]any{"command": "view", "path": link})
	if res := call(t, e, "o1", map[string]any{"command": "str_replace", "path": link, "old_str": "a", "new_str": "b"}); res.IsError {
		t.Fatalf("edit through a link = %+v", res)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	if got := readFile(t, target); got != "b\n" {
		t.Errorf("target = %q", got)
	}
}

// TestEditorWriteErrorNamesFileOnce: a failed write names the file the model asked for,
// once, and not the temporary file it was written through.
func TestEditorWriteErrorNamesFileOnce(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "d")
	if err := os.MkdirAll(filepath.Join(target, "full"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := NewEditor(EditorOptions{})
	err := e.write("o", target, []byte("x"), 0o644, false) // the rename onto a directory fails
	if err == nil {
		t.Fatal("write onto a non-empty directory succeeded")
	}
	if msg := err.Error(); strings.Count(msg, target) != 1 || strings.Contains(msg, ".myco-") || !strings.HasPrefix(msg, "write "+target+": ") {
		t.Errorf("write error = %q, want the file named once and no temporary name", msg)
	}
}
