package tools

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestViewImage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string // the extensions lie on purpose
		data []byte
		mt   string
	}{
		{"png.txt", append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 20)...), "image/png"},
		{"jpeg.png", append([]byte{0xFF, 0xD8, 0xFF, 0xE0}, make([]byte, 20)...), "image/jpeg"},
		{"gif87", append([]byte("GIF87a"), make([]byte, 20)...), "image/gif"},
		{"gif89.webp", append([]byte("GIF89a"), make([]byte, 20)...), "image/gif"},
		{"webp.jpeg", append([]byte("RIFF\x10\x00\x00\x00WEBPVP8 "), make([]byte, 20)...), "image/webp"},
	}
	im := NewImage(ImageOptions{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			os.WriteFile(path, tt.data, 0o644)
			res := call(t, im, "o1", map[string]any{"path": path})
			if res.IsError || len(res.Images) != 1 || res.Images[0].MediaType != tt.mt {
				t.Fatalf("view_image %s = %+v, want one %s", tt.name, res, tt.mt)
			}
			if got, _ := base64.StdEncoding.DecodeString(res.Images[0].Data); string(got) != string(tt.data) {
				t.Errorf("%s: data does not round-trip", tt.name)
			}
			if !strings.Contains(res.Text, tt.mt) {
				t.Errorf("text = %q, want the media type", res.Text)
			}
		})
	}
}

func TestViewImageRejects(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"notes.png": "just text\n",
		"doc.png":   "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n",
		"empty.gif": "",
		"pic.svg":   `<svg xmlns="http://www.w3.org/2000/svg"/>`,
		"blob.jpg":  "\x00\x01\x02\x03\xfe",
	}
	for name, data := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644)
	}
	tests := []struct {
		name, path, want string
	}{
		{"text", filepath.Join(dir, "notes.png"), `is not a png, jpeg, gif or webp image: it looks like text (it starts "just text\n"). view_image reads the format from the file's contents, not its name; view text files with str_replace_based_edit_tool`},
		{"pdf", filepath.Join(dir, "doc.png"), "it looks like a PDF document"},
		{"empty", filepath.Join(dir, "empty.gif"), "it looks like an empty file"},
		{"svg", filepath.Join(dir, "pic.svg"), "an SVG image"},
		{"binary", filepath.Join(dir, "blob.jpg"), "unrecognized data (its first bytes are 00 01 02 03 fe)"},
		{"directory", dir, "is a directory, not a regular file"},
		{"relative", "pic.png", `pic.png" resolved against the host process's working directory`},
		{"missing", filepath.Join(dir, "nope.png"), "no such file"},
	}
	im := NewImage(ImageOptions{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, im, "o1", map[string]any{"path": tt.path})
			if !res.IsError || !strings.Contains(res.Text, tt.want) || len(res.Images) != 0 {
				t.Errorf("view_image %s = %+v, want an error containing %q", tt.path, res, tt.want)
			}
		})
	}
	if res := call(t, im, "o1", map[string]any{"path": dir, "host": "x"}); !res.IsError || !strings.Contains(res.Text, `unknown field "host"`) {
		t.Errorf("unknown field = %+v", res)
	}
}

func TestViewImageCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.png")
	os.WriteFile(path, append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 292)...), 0o644) // 300 bytes -> 400 base64
	im := NewImage(ImageOptions{MaxBase64Bytes: 399})
	res := call(t, im, "o1", map[string]any{"path": path})
	want := path + " is 400 bytes of base64 (300 bytes on disk), over view_image's limit here of 399 bytes of base64 (399 bytes, max_image_base64_bytes)"
	if !res.IsError || !strings.Contains(res.Text, want) {
		t.Fatalf("oversized = %q, want %q", res.Text, want)
	}
	if !strings.Contains(im.Spec().Description, "399 bytes of base64") {
		t.Errorf("the description does not quote the live limit: %q", im.Spec().Description)
	}
	if d := NewImage(ImageOptions{}).Spec().Description; !strings.Contains(d, "5242880 bytes of base64 (5 MiB;") {
		t.Errorf("the default description = %q", d)
	}
	if res := call(t, NewImage(ImageOptions{MaxBase64Bytes: 400}), "o1", map[string]any{"path": path}); res.IsError {
		t.Errorf("an image exactly at the cap was refused: %+v", res)
	}
}
