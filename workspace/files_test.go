package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pngHead is the start of a PNG file.
const pngHead = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"

// testWorkspace builds a workspace beside the things a hostile name might reach: a secret
// next to it, a sibling directory whose name starts with the workspace's, symlinks out, a
// FIFO, a socket and hidden files.
func testWorkspace(t *testing.T) (*Files, string) {
	t.Helper()
	parent := t.TempDir()
	ws := filepath.Join(parent, "workspace")
	write(t, filepath.Join(parent, "secret.txt"), "SECRET outside")
	write(t, filepath.Join(parent, "workspace-evil", "secret.txt"), "SECRET in the sibling")
	write(t, filepath.Join(ws, "notes", "a.md"), "# A note\n")
	write(t, filepath.Join(ws, "notes", "deep", "b.txt"), "b")
	write(t, filepath.Join(ws, "prelude", "x.md"), "entry")
	write(t, filepath.Join(ws, "Readme"), "plain text without an extension\n")
	write(t, filepath.Join(ws, "page.html"), "<script>alert(1)</script>")
	write(t, filepath.Join(ws, "index"), "<!DOCTYPE html><html><script>alert(1)</script></html>")
	write(t, filepath.Join(ws, "img.png"), pngHead)
	write(t, filepath.Join(ws, "blob.bin"), "\x00\x01\x02")
	write(t, filepath.Join(ws, ".hidden.md"), "SECRET hidden")
	write(t, filepath.Join(ws, ".git", "config"), "SECRET git")
	write(t, filepath.Join(ws, ".env"), "SECRET env")
	write(t, filepath.Join(ws, ".ssh", "id_ed25519"), "SECRET key")
	write(t, filepath.Join(ws, `back\slash.txt`), "unreachable by name")
	write(t, filepath.Join(ws, "latin1-caf\xe9.txt"), "unreachable by name")
	for link, target := range map[string]string{
		"link-in.md":    "notes/a.md",
		"link-dir-in":   "notes",
		"link-out.txt":  "../secret.txt",
		"link-abs.txt":  filepath.Join(parent, "secret.txt"),
		"link-dir-out":  "../workspace-evil",
		"link-prefix":   filepath.Join(parent, "workspace-evil"),
		"null":          "/dev/null",
		"link-dangling": "nowhere",
		// Hidden names reached through a symlink (issue 28): the rules are on the
		// resolved path.
		"envlink":          ".env",
		"gitdir":           ".git",
		"sshdir":           "./.ssh",
		"notes/up-env":     "../.env",
		"via-hidden.md":    ".git/../notes/a.md",
		"link-to-envlink":  "envlink",
		"notes/deep/up-ok": "../a.md",
		"loop":             "loop",
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(ws, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := syscall.Mknod(filepath.Join(ws, "zero"), syscall.S_IFCHR|0o666, 1<<8|5); err != nil {
		t.Logf("no device node of our own (%v): devices are covered by the /dev/null link", err)
	}
	files, err := OpenFiles(ws)
	if err != nil {
		t.Fatal(err)
	}
	return files, ws
}

// bounded runs f and fails the test if it does not return: a FIFO must never block.
func bounded(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s blocked", what)
		return nil
	}
}

func TestFilesRefusals(t *testing.T) {
	files, _ := testWorkspace(t)
	for _, name := range []string{
		"../secret.txt", "..", "../", "notes/../../secret.txt", "notes/../a.md",
		"../workspace-evil/secret.txt", "../workspace-evil",
		"/etc/passwd", "//etc/passwd", "/notes/a.md", "/",
		"notes//a.md", "./notes/a.md", "notes/./a.md", "notes/a.md/", "notes/a.md//",
		`notes\a.md`, `..\secret.txt`, `back\slash.txt`, `\`,
		"notes/a.md\x00", "\x00", "notes\x00/a.md", "latin1-caf\xe9.txt",
		"link-out.txt", "link-abs.txt", "link-dir-out", "link-dir-out/secret.txt", "link-prefix/secret.txt",
		"null", "fifo", "sock", "zero", "link-dangling",
		".hidden.md", ".git/config", ".git", "notes/.", "missing.md", "notes/missing",
		"envlink", "gitdir", "gitdir/config", "sshdir", "sshdir/id_ed25519", "notes/up-env", "via-hidden.md",
		"link-to-envlink", "loop",
		strings.Repeat("a", 5000),
	} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			if _, err := files.Stat(name); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Stat(%q) = %v, want not found", name, err)
			}
			err := bounded(t, "Open", func() error {
				f, err := files.Open(name)
				if err == nil {
					data, _ := io.ReadAll(f)
					f.Close()
					return fmt.Errorf("opened, read %q", data)
				}
				return err
			})
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Open(%q) = %v, want not found", name, err)
			}
			if err := bounded(t, "Page", func() error { _, err := files.Page(name, 1); return err }); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Page(%q, 1) = %v, want not found", name, err)
			}
			if _, err := files.ReadDir(name); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("ReadDir(%q) = %v, want not found", name, err)
			}
			if _, err := files.Stat(name); errors.Is(err, fs.ErrPermission) {
				t.Errorf("Stat(%q) = %v: a refusal must not tell permission from absence", name, err)
			}
		})
	}
}

func TestFilesOpen(t *testing.T) {
	files, ws := testWorkspace(t)
	for _, tt := range []struct {
		name, want, typ string
		kind            Kind
	}{
		{"notes/a.md", "# A note\n", TypeText, KindMarkdown},
		{"link-in.md", "# A note\n", TypeText, KindMarkdown}, // a symlink inside the workspace
		{"link-dir-in/a.md", "# A note\n", TypeText, KindMarkdown},
		{"notes/deep/up-ok", "# A note\n", TypeText, KindText}, // the link's own name gives the type
		{"notes/deep/b.txt", "b", TypeText, KindText},
		{"prelude/x.md", "entry", TypeText, KindMarkdown},
		{"Readme", "plain text without an extension\n", TypeText, KindText},
		{"page.html", "<script>alert(1)</script>", TypeText, KindText},
		{"index", "<!DOCTYPE html><html><script>alert(1)</script></html>", TypeText, KindText},
		{"img.png", pngHead, "image/png", KindImage},
		{"blob.bin", "\x00\x01\x02", TypeDownload, KindDownload},
	} {
		f, err := files.Open(tt.name)
		if err != nil {
			t.Errorf("Open(%q) = %v", tt.name, err)
			continue
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil || string(data) != tt.want || f.Type != tt.typ || f.Kind != tt.kind || f.Info.Size != int64(len(tt.want)) || f.Info.IsDir {
			t.Errorf("Open(%q) = %q, %s, %s, %+v, %v; want %q, %s, %s", tt.name, data, f.Type, f.Kind, f.Info, err, tt.want, tt.typ, tt.kind)
		}
	}
	if _, err := files.Open("notes"); !errors.Is(err, ErrIsDir) {
		t.Errorf("Open of a directory = %v, want ErrIsDir", err)
	}
	for _, name := range []string{"", ".", "notes", "notes/", "link-dir-in", "notes/deep"} {
		if it, err := files.Stat(name); err != nil || !it.IsDir {
			t.Errorf("Stat(%q) = %+v, %v; want a directory", name, it, err)
		}
	}
	day := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(ws, "notes", "a.md"), day, day)
	if it, err := files.Stat("notes/a.md"); err != nil || it.Name != "a.md" || it.Size != 9 || !it.ModTime.Equal(day) || it.IsDir {
		t.Errorf("Stat(notes/a.md) = %+v, %v", it, err)
	}
}

func TestFilesReadDir(t *testing.T) {
	files, _ := testWorkspace(t)
	names := func(l Listing) []string {
		var out []string
		for _, it := range l.Items {
			n := it.Name
			if it.IsDir {
				n += "/"
			}
			out = append(out, n)
		}
		return out
	}
	for _, name := range []string{"", ".", "./"} {
		l, err := bounded2(t, func() (Listing, error) { return files.ReadDir(name) })
		want := []string{"link-dir-in/", "notes/", "prelude/", "blob.bin", "img.png", "index", "link-in.md", "page.html", "Readme"}
		if err != nil || !slices.Equal(names(l), want) || l.More {
			t.Errorf("ReadDir(%q) = %v, more %v, %v; want %v", name, names(l), l.More, err, want)
		}
	}
	l, err := files.ReadDir("notes/")
	if err != nil || !slices.Equal(names(l), []string{"deep/", "a.md"}) {
		t.Errorf("ReadDir(notes/) = %v, %v; want no up-env, whose target is hidden", names(l), err)
	}
	for _, it := range l.Items {
		if it.Name == "a.md" && (it.Size != 9 || it.ModTime.IsZero()) {
			t.Errorf("a.md listed as %+v", it)
		}
	}
	if l, err := files.ReadDir("link-dir-in"); err != nil || !slices.Equal(names(l), []string{"deep/", "a.md"}) {
		t.Errorf("ReadDir(link-dir-in) = %v, %v", names(l), err)
	}
	if _, err := files.ReadDir("notes/a.md"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadDir of a file = %v, want not found", err)
	}
}

// bounded2 is bounded for a call with a result.
func bounded2[T any](t *testing.T, f func() (T, error)) (T, error) {
	t.Helper()
	var v T
	err := bounded(t, "the call", func() error {
		var err error
		v, err = f()
		return err
	})
	return v, err
}

func TestFilesReadDirBound(t *testing.T) {
	ws := t.TempDir()
	for i := range maxListing + 5 {
		write(t, filepath.Join(ws, fmt.Sprintf("f%04d.txt", i)), "")
	}
	write(t, filepath.Join(ws, "zz-dir", "x"), "")
	files, err := OpenFiles(ws)
	if err != nil {
		t.Fatal(err)
	}
	l, err := files.ReadDir("")
	if err != nil || len(l.Items) != maxListing || !l.More || l.Items[0].Name != "zz-dir" || l.Items[1].Name != "f0000.txt" {
		t.Errorf("ReadDir of %d files = %d items, more %v, %v; want %d, the directory first", maxListing+6, len(l.Items), l.More, err, maxListing)
	}
}

// TestFilesLiveDir: the workspace may not exist when the server starts, and may be
// replaced while it runs; each call sees the directory as it is.
func TestFilesLiveDir(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "workspace")
	files, err := OpenFiles(ws)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := files.ReadDir(""); err != nil || len(l.Items) != 0 {
		t.Errorf("ReadDir of a missing workspace = %+v, %v; want empty", l, err)
	}
	if _, err := files.Open("a.md"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open in a missing workspace = %v, want not found", err)
	}
	write(t, filepath.Join(ws, "a.md"), "one")
	if f, err := files.Open("a.md"); err != nil {
		t.Errorf("Open after the workspace appeared = %v", err)
	} else {
		f.Close()
	}
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws, "b.md"), "two")
	if l, err := files.ReadDir(""); err != nil || len(l.Items) != 1 || l.Items[0].Name != "b.md" {
		t.Errorf("ReadDir after the workspace was replaced = %+v, %v", l, err)
	}
	for _, bad := range []string{"relative/workspace", filepath.Join(ws, "b.md")} {
		if _, err := OpenFiles(bad); err == nil {
			t.Errorf("OpenFiles(%q) succeeded", bad)
		}
	}
}

// TestFilesServeContent: an open File streams through http.ServeContent, ranges included,
// with the type it was given and no sniffing.
func TestFilesServeContent(t *testing.T) {
	files, _ := testWorkspace(t)
	f, err := files.Open("index")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/profiles/p/workspace/index", nil)
	req.Header.Set("Range", "bytes=0-8")
	rec.Header().Set("Content-Type", f.Type)
	http.ServeContent(rec, req, f.Info.Name, f.Info.ModTime, f)
	if rec.Code != http.StatusPartialContent || rec.Body.String() != "<!DOCTYPE" || rec.Header().Get("Content-Type") != TypeText {
		t.Errorf("ServeContent = %d %q %q", rec.Code, rec.Body, rec.Header().Get("Content-Type"))
	}
}

// TestFilesDeny (issue 28): nothing inside a denied directory is shown, whether named
// directly or through a symlink, and the listing leaves it out.
func TestFilesDeny(t *testing.T) {
	_, ws := testWorkspace(t)
	files, err := OpenFiles(ws, filepath.Join(ws, "notes"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"notes", "notes/a.md", "link-in.md", "link-dir-in", "link-dir-in/a.md"} {
		if _, err := files.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat(%q) = %v, want not found", name, err)
		}
		if _, err := files.Open(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open(%q) = %v, want not found", name, err)
		}
	}
	l, err := files.ReadDir("")
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range l.Items {
		if it.Name == "notes" || it.Name == "link-in.md" || it.Name == "link-dir-in" {
			t.Errorf("the listing shows %s, which leads into the denied directory", it.Name)
		}
	}
	if _, err := files.Open("img.png"); err != nil {
		t.Errorf("Open(img.png) = %v: the rest is shown", err)
	}
}
