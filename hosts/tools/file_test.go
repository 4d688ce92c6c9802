package tools

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// callWithin runs a tool call and fails the test if it does not return within 10 s: a
// call that blocks on a FIFO never returns. It returns the result, or a zero Result once
// the bound passed.
func callWithin(t *testing.T, tool Tool, input any) Result {
	t.Helper()
	b, _ := json.Marshal(input)
	done := make(chan Result, 1)
	go func() { done <- tool.Call(t.Context(), "o1", b) }()
	select {
	case res := <-done:
		return res
	case <-time.After(10 * time.Second):
		t.Errorf("%s %s blocked", tool.Name(), b)
		return Result{}
	}
}

// unblockFIFOs opens each FIFO for reading and writing, which releases a reader blocked
// in open, so a failing test does not leave a goroutine stuck forever.
func unblockFIFOs(t *testing.T, paths ...string) {
	t.Cleanup(func() {
		for _, p := range paths {
			if f, err := os.OpenFile(p, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
	})
}

// TestNonRegularFilesRefused: the editor and view_image refuse a FIFO, a socket, a device
// and (for view_image) a directory at once, naming the path and its type.
func TestNonRegularFilesRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.png")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	unblockFIFOs(t, fifo)
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	files := []struct{ path, kind string }{
		{fifo, "a named pipe (FIFO)"},
		{sock, "a socket"},
		{"/dev/null", "a character device"},
	}
	editor, image := NewEditor(EditorOptions{}), NewImage(ImageOptions{})
	for _, f := range files {
		want := f.path + " is " + f.kind + ", not a regular file"
		for _, tc := range []struct {
			tool  Tool
			input map[string]any
		}{
			{image, map[string]any{"path": f.path}},
			{editor, map[string]any{"command": "view", "path": f.path}},
			{editor, map[string]any{"command": "str_replace", "path": f.path, "old_str": "a", "new_str": "b"}},
			{editor, map[string]any{"command": "insert", "path": f.path, "insert_line": 0, "insert_text": "b"}},
			{editor, map[string]any{"command": "create", "path": f.path, "file_text": "b"}},
		} {
			if res := callWithin(t, tc.tool, tc.input); !res.IsError || !strings.Contains(res.Text, want) {
				t.Errorf("%s %v = %+v, want an error containing %q", tc.tool.Name(), tc.input, res, want)
			}
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v, %v", fi, err)
	}
	if res := callWithin(t, image, map[string]any{"path": dir}); !res.IsError || !strings.Contains(res.Text, dir+" is a directory, not a regular file") {
		t.Errorf("view_image of a directory = %+v", res)
	}
}

// TestFIFOSwappedInDoesNotBlock swaps a FIFO and a regular file at one path while the
// editor and view_image read it: whichever they find, they return.
func TestFIFOSwappedInDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "img.png")
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 20)...)
	stop := make(chan struct{})
	swapped := make(chan struct{})
	var fifos []string
	for i := range 2 {
		f := filepath.Join(dir, fmt.Sprint("fifo", i))
		fifos = append(fifos, f)
	}
	unblockFIFOs(t, append(fifos, path)...)
	go func() {
		defer close(swapped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp := filepath.Join(dir, "next")
			if i%2 == 0 {
				os.WriteFile(tmp, png, 0o644)
			} else {
				syscall.Mkfifo(tmp, 0o644)
			}
			os.Rename(tmp, path)
		}
	}()
	defer func() { close(stop); <-swapped }()
	editor, image := NewEditor(EditorOptions{}), NewImage(ImageOptions{})
	for range 1000 {
		res := callWithin(t, image, map[string]any{"path": path})
		res2 := callWithin(t, editor, map[string]any{"command": "view", "path": path})
		if t.Failed() {
			t.Fatalf("a read blocked; last results %+v, %+v", res, res2)
		}
	}
}

// TestOpenCheckedFIFO is the race of TestFIFOSwappedInDoesNotBlock made certain: the path
// passed the type check as a regular file and is a FIFO by the time it is opened.
func TestOpenCheckedFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	unblockFIFOs(t, fifo)
	done := make(chan error, 1)
	go func() {
		f, _, err := openChecked(fifo)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if want := fifo + " is a named pipe (FIFO), not a regular file"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("openChecked(FIFO) = %v, want %q", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("openChecked(FIFO) blocked")
	}
}

// TestEditorCreateRespectsUmask: a new file and the directories created for it get the
// usual 0666 and 0777 less the umask; an existing file keeps its mode whatever the umask.
func TestEditorCreateRespectsUmask(t *testing.T) {
	for _, tt := range []struct {
		umask          int
		file, dir, old os.FileMode
	}{
		{0o022, 0o644, 0o755, 0o600},
		{0o027, 0o640, 0o750, 0o664},
		{0o002, 0o664, 0o775, 0o640},
		{0o077, 0o600, 0o700, 0o666},
	} {
		t.Run(fmt.Sprintf("%04o", tt.umask), func(t *testing.T) {
			old := syscall.Umask(tt.umask)
			defer syscall.Umask(old)
			dir := t.TempDir()
			e := NewEditor(EditorOptions{})
			path := filepath.Join(dir, "sub", "new.txt")
			if res := call(t, e, "o1", map[string]any{"command": "create", "path": path, "file_text": "x\n"}); res.IsError {
				t.Fatalf("create = %+v", res)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != tt.file {
				t.Errorf("new file mode = %04o, want %04o", fi.Mode().Perm(), tt.file)
			}
			if fi, _ := os.Stat(filepath.Dir(path)); fi.Mode().Perm() != tt.dir {
				t.Errorf("new directory mode = %04o, want %04o", fi.Mode().Perm(), tt.dir)
			}
			existing := filepath.Join(dir, "existing")
			os.WriteFile(existing, []byte("a\n"), 0o600)
			os.Chmod(existing, tt.old)
			call(t, e, "o1", map[string]any{"command": "view", "path": existing})
			if res := call(t, e, "o1", map[string]any{"command": "str_replace", "path": existing, "old_str": "a", "new_str": "b"}); res.IsError {
				t.Fatalf("str_replace = %+v", res)
			}
			if fi, _ := os.Stat(existing); fi.Mode().Perm() != tt.old {
				t.Errorf("edited file mode = %04o, want %04o kept", fi.Mode().Perm(), tt.old)
			}
		})
	}
}
