package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"unicode/utf8"

	"myco.dev/agent/model"
)

// ImageOptions configures view_image.
type ImageOptions struct {
	// MaxBase64Bytes is the largest image accepted, measured on its base64 encoding (the
	// model's max_image_base64_bytes); default 5 MiB.
	MaxBase64Bytes int
	// Guard, when not nil, refuses paths in myco's own files; nil allows every path.
	Guard *Guard
	// Dirs, when not nil, gives the directory a relative path is resolved against (the
	// caller's bash session's current directory); without it, or when the caller has
	// none, it is the session's directory ([WithWorkDir]), else the host process's
	// working directory.
	Dirs WorkDirs
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
		Description: fmt.Sprintf("Look at an image file: screenshots, diagrams, rendered output. png, jpeg, gif and webp are accepted, recognised by the file's contents whatever its extension. The limit is the current model's (the runtime notes' model line gives it), and at most %d bytes of base64 (%s; about %d bytes on disk) on this host; a larger file fails with both sizes. A relative path is resolved against the current directory of your most recently used bash session on that host that still runs (action=start), else this session's directory on the local host and the host process's working directory on a remote one; the result shows the absolute path. Text files stay with str_replace_based_edit_tool.",
			im.o.MaxBase64Bytes, mib(im.o.MaxBase64Bytes), im.o.MaxBase64Bytes/4*3) + im.o.Guard.describe(),
		Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"path of the image: absolute, or relative as the description says"}},"required":["path"],"additionalProperties":false}`),
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

var imageFields = []string{"path"}

// Call reads one image for owner.
func (im *Image) Call(ctx context.Context, owner string, input json.RawMessage) Result {
	var in struct {
		Path string `json:"path"`
	}
	if err := decodeInput(input, &in, imageFields, nil); err != nil {
		return Errorf("%v", err)
	}
	if in.Path == "" {
		return Errorf("path is required")
	}
	p, err := resolve(ctx, im.o.Dirs, owner, in.Path)
	if err != nil {
		return Errorf("%v", err)
	}
	real, err := realPath(p.abs)
	if err != nil {
		return Errorf("%v", err)
	}
	if err := im.o.Guard.resolved().check(im.Name(), p.abs, real, false); err != nil {
		return Errorf("%v", err)
	}
	f, info, err := openRegular(real)
	if errors.Is(err, fs.ErrNotExist) {
		via := ""
		if real != p.abs {
			via = " (it resolves to " + real + ")"
		}
		return Errorf("%s does not exist%s: no such file or directory", p.shown, via)
	}
	if err != nil {
		return Errorf("%v", err)
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	mt := SniffImage(head[:n])
	if mt == "" {
		return Errorf("%s is not a png, jpeg, gif or webp image: it looks like %s. view_image reads the format from the file's contents, not its name; view text files with str_replace_based_edit_tool", p.shown, describe(head[:n]))
	}
	lim, byModel := ImageLimitFrom(ctx)
	byModel = byModel && lim.MaxBase64Bytes < im.o.MaxBase64Bytes
	if res, ok := im.tooBig(p.shown, info.Size(), lim, byModel); !ok {
		return res
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Errorf("%v", err)
	}
	capped := im.o.MaxBase64Bytes
	if byModel {
		capped = lim.MaxBase64Bytes
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(capped)/4*3+1)) // the file may have grown
	if err != nil {
		return Errorf("%v", err)
	}
	if res, ok := im.tooBig(p.shown, int64(len(data)), lim, byModel); !ok {
		return res
	}
	return Result{
		Text:   fmt.Sprintf("%s: %s, %d bytes (%d bytes of base64)", p.shown, mt, len(data), Base64Len(int64(len(data)))),
		Images: []model.Image{{MediaType: mt, Data: base64.StdEncoding.EncodeToString(data)}},
	}
}

// tooBig checks a file of size bytes against the cap of the call's model when byModel
// (lim, smaller than this host's), else against this host's cap.
func (im *Image) tooBig(path string, size int64, lim ImageLimit, byModel bool) (Result, bool) {
	b64 := Base64Len(size)
	switch {
	case byModel && b64 > int64(lim.MaxBase64Bytes):
		return Errorf("%s", lim.OverModelLimit(path, b64)), false
	case b64 > int64(im.o.MaxBase64Bytes):
		return Errorf("%s is %d bytes of base64 (%d bytes on disk), over view_image's limit here of %d bytes of base64 (%s, max_image_base64_bytes); scale it down or crop it first, for example with convert -resize 50%%",
			path, b64, size, im.o.MaxBase64Bytes, mib(im.o.MaxBase64Bytes)), false
	}
	return Result{}, true
}

// describe names what a file that is not an accepted image appears to be.
func describe(head []byte) string {
	kinds := []struct{ magic, name string }{
		{"%PDF", "a PDF document"},
		{"<svg", "an SVG image (XML text; render it to png first, or view it with the editor)"},
		{"II*\x00", "a TIFF image (convert it to png first)"},
		{"MM\x00*", "a TIFF image (convert it to png first)"},
		{"\x00\x00\x01\x00", "an ICO icon (convert it to png first)"},
		{"PK\x03\x04", "a zip archive"},
		{"\x1f\x8b", "gzip data"},
		{"\x7fELF", "an ELF executable"},
	}
	for _, k := range kinds {
		if bytes.HasPrefix(head, []byte(k.magic)) {
			return k.name
		}
	}
	if len(head) >= 12 && string(head[4:8]) == "ftyp" {
		return fmt.Sprintf("an ISO media file (brand %q, e.g. HEIC, AVIF or MP4; convert it to png first)", head[8:12])
	}
	switch {
	case len(head) == 0:
		return "an empty file"
	case bytes.Contains(head, []byte("<svg")) || bytes.HasPrefix(head, []byte("<?xml")):
		return "XML or SVG text"
	case utf8.Valid(head[:max(0, len(head)-3)]) && bytes.IndexByte(head, 0) < 0:
		return fmt.Sprintf("text (it starts %q)", head)
	case bytes.HasPrefix(head, []byte("BM")):
		return "a BMP image (convert it to png first)"
	}
	return fmt.Sprintf("unrecognized data (its first bytes are % x)", head)
}

// mib formats a byte count for people: "5 MiB", "1.5 KiB", "399 bytes".
func mib(n int) string {
	unit := func(d float64, name string) string {
		return strconv.FormatFloat(float64(n)/d, 'f', 1, 64) + " " + name
	}
	switch {
	case n >= 1<<20:
		return strings.Replace(unit(1<<20, "MiB"), ".0 ", " ", 1)
	case n >= 1<<10:
		return strings.Replace(unit(1<<10, "KiB"), ".0 ", " ", 1)
	}
	return strconv.Itoa(n) + " bytes"
}
