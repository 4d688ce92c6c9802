package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"myco/agent/model"
)

// ImageOptions configures view_image.
type ImageOptions struct {
	// MaxBase64Bytes is the largest image accepted, measured on its base64 encoding (the
	// model's max_image_base64_bytes); default 5 MiB.
	MaxBase64Bytes int
}

// Image is view_image: it returns a png, jpeg, gif or webp file as an image the model can
// look at. Safe for concurrent use.
type Image struct {
	o ImageOptions
}

// NewImage returns view_image.
func NewImage(o ImageOptions) *Image {
	if o.MaxBase64Bytes <= 0 {
		o.MaxBase64Bytes = 5 << 20
	}
	return &Image{o: o}
}

// Name returns "view_image".
func (im *Image) Name() string { return "view_image" }

// Spec describes the tool, quoting the live size limit.
func (im *Image) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "view_image",
		Description: fmt.Sprintf("Look at an image file (png, jpeg, gif or webp, recognised by its contents, whatever the extension): screenshots, diagrams, rendered output. The limit is %d bytes of base64 (about %d bytes on disk). Text files stay with the editor.",
			im.o.MaxBase64Bytes, im.o.MaxBase64Bytes/4*3),
		Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"absolute path of the image"}},"required":["path"],"additionalProperties":false}`),
	}
}

// SniffImage returns the media type of an image by its magic number, or "".
func SniffImage(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte{0xFF, 0xD8, 0xFF}):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 12 && bytes.Equal(head[:4], []byte("RIFF")) && bytes.Equal(head[8:12], []byte("WEBP")):
		return "image/webp"
	}
	return ""
}

// Base64Len is the size of n bytes encoded as standard padded base64.
func Base64Len(n int64) int64 { return (n + 2) / 3 * 4 }

// Call reads one image for owner.
func (im *Image) Call(ctx context.Context, owner string, input json.RawMessage) Result {
	var in struct {
		Path string `json:"path"`
	}
	if err := decodeStrict(input, &in); err != nil {
		return Errorf("view_image: %v", err)
	}
	if !filepath.IsAbs(in.Path) {
		return Errorf("view_image: path %q is not absolute", in.Path)
	}
	f, err := os.Open(in.Path)
	if err != nil {
		return Errorf("view_image: %v", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Errorf("view_image: %v", err)
	}
	if !info.Mode().IsRegular() {
		return Errorf("view_image: %s is not a regular file", in.Path)
	}
	head := make([]byte, 16)
	n, _ := io.ReadFull(f, head)
	mt := SniffImage(head[:n])
	if mt == "" {
		return Errorf("view_image: %s is not a png, jpeg, gif or webp image (its first bytes are %q); read text files with the editor", in.Path, head[:n])
	}
	if b64 := Base64Len(info.Size()); b64 > int64(im.o.MaxBase64Bytes) {
		return Errorf("view_image: %s is %d bytes of base64 (%d on disk), over the model's limit of %d base64 bytes (max_image_base64_bytes); scale it down, for example with convert -resize 50%%", in.Path, b64, info.Size(), im.o.MaxBase64Bytes)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Errorf("view_image: %v", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return Errorf("view_image: %v", err)
	}
	return Result{
		Text:   fmt.Sprintf("%s: %s, %d bytes", in.Path, mt, len(data)),
		Images: []model.Image{{MediaType: mt, Data: base64.StdEncoding.EncodeToString(data)}},
	}
}
