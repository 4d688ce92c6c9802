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
	files := map[string]struct {
		data []byte
		mt   string
	}{
		"png.txt":   {append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 20)...), "image/png"},
		"jpeg.png":  {append([]byte{0xFF, 0xD8, 0xFF, 0xE0}, make([]byte, 20)...), "image/jpeg"},
		"gif":       {append([]byte("GIF89a"), make([]byte, 20)...), "image/gif"},
		"webp.jpeg": {append([]byte("RIFF\x10\x00\x00\x00WEBPVP8 "), make([]byte, 20)...), "image/webp"},
	}
	im := NewImage(ImageOptions{})
	for name, f := range files {
		path := filepath.Join(dir, name)
		os.WriteFile(path, f.data, 0o644)
		res := call(t, im, "o1", map[string]any{"path": path})
		if res.IsError || len(res.Images) != 1 || res.Images[0].MediaType != f.mt {
			t.Errorf("%s: %+v, want one %s", name, res, f.mt)
			continue
		}
		if got, _ := base64.StdEncoding.DecodeString(res.Images[0].Data); string(got) != string(f.data) {
			t.Errorf("%s: data does not round-trip", name)
		}
	}
	text := filepath.Join(dir, "notes.png")
	os.WriteFile(text, []byte("just text"), 0o644)
	if res := call(t, im, "o1", map[string]any{"path": text}); !res.IsError || !strings.Contains(res.Text, "not a png") {
		t.Errorf("text file = %+v", res)
	}
}

func TestViewImageCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.png")
	os.WriteFile(path, append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 292)...), 0o644) // 300 bytes -> 400 base64
	im := NewImage(ImageOptions{MaxBase64Bytes: 399})
	res := call(t, im, "o1", map[string]any{"path": path})
	if !res.IsError || !strings.Contains(res.Text, "400 bytes of base64") || !strings.Contains(res.Text, "399") {
		t.Fatalf("oversized = %+v, want an error naming 400 and 399", res)
	}
	if !strings.Contains(im.Spec().Description, "399") {
		t.Errorf("the description does not quote the live limit: %q", im.Spec().Description)
	}
	if res := call(t, NewImage(ImageOptions{MaxBase64Bytes: 400}), "o1", map[string]any{"path": path}); res.IsError {
		t.Errorf("an image exactly at the cap was refused: %+v", res)
	}
}
