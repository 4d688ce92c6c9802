package sessions

import (
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"myco.dev/agent/model"
	"myco.dev/hosts/tools"
)

// MaxAttachmentText bounds a text file attached inline, like the editor's view cap.
const MaxAttachmentText = 256 << 10

// attachPattern finds @path tokens: an @ at the start of the text or after white space.
var attachPattern = regexp.MustCompile(`(^|\s)@(\S+)`)

// Attachments turns the @path tokens of a user's message into parts: an image file (by
// its magic number: png, jpeg, gif, webp) becomes an image part, within maxImageBase64
// (measured as base64, as view_image measures), and a text file is quoted inline, within
// [MaxAttachmentText]. Relative paths resolve against dir, and ~/ against home. A token
// that names no file is left as text. A file that is too big, not regular, or binary and
// not an image is refused with an error that says which and why. The text itself stays the
// first part.
func Attachments(text, dir, home string, maxImageBase64 int) ([]model.Part, error) {
	parts := []model.Part{model.TextPart(text)}
	seen := map[string]bool{}
	for _, m := range attachPattern.FindAllStringSubmatch(text, -1) {
		name := strings.TrimRight(m[2], ".,;:!?)\"'")
		path := name
		if rest, ok := strings.CutPrefix(path, "~/"); ok && home != "" {
			path = filepath.Join(home, rest)
		} else if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		if seen[path] {
			continue
		}
		info, err := os.Stat(path)
		if err != nil {
			continue // not a file: the @ was prose
		}
		seen[path] = true
		p, err := attachment(name, path, info, maxImageBase64)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// MissingAttachments returns the @path tokens of text that look like paths (with a slash,
// or a dot before a short extension) but name no file, resolved as [Attachments] does:
// they went to the model as text, and the user should know.
func MissingAttachments(text, dir, home string) []string {
	var out []string
	for _, m := range attachPattern.FindAllStringSubmatch(text, -1) {
		name := strings.TrimRight(m[2], ".,;:!?)\"'")
		if !strings.Contains(name, "/") && !looksLikeFile(name) {
			continue
		}
		path := name
		if rest, ok := strings.CutPrefix(path, "~/"); ok && home != "" {
			path = filepath.Join(home, rest)
		} else if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		if _, err := os.Stat(path); err != nil && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// looksLikeFile reports whether name ends in a dot and a short extension (notes.txt), not
// an address (me@example.com is no @token: the @ is not at a word's start).
func looksLikeFile(name string) bool {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || len(name)-i-1 < 1 || len(name)-i-1 > 5 {
		return false
	}
	for _, c := range name[i+1:] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func attachment(name, path string, info os.FileInfo, maxImageBase64 int) (model.Part, error) {
	if !info.Mode().IsRegular() {
		return model.Part{}, fmt.Errorf("@%s is not a regular file (%s); attach files only", name, info.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return model.Part{}, fmt.Errorf("attach @%s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, AttachmentLimit(maxImageBase64)+1))
	if err != nil {
		return model.Part{}, fmt.Errorf("attach @%s: %w", name, err)
	}
	return Attach("@"+name, data, info.Size(), maxImageBase64)
}

// AttachmentLimit is the most bytes of a file that [Attach] needs to read to take or
// refuse it.
func AttachmentLimit(maxImageBase64 int) int64 {
	return max(int64(MaxAttachmentText), int64(maxImageBase64)/4*3+3)
}

// Attach turns the bytes of a file the user attached (an @path, an upload) into a part: an
// image (by its magic number: png, jpeg, gif, webp) within maxImageBase64, measured as
// base64 as view_image measures, or UTF-8 text within [MaxAttachmentText], quoted in a
// fence the text cannot close. name is how the user knows the file; size is its whole size
// (data may hold only the first [AttachmentLimit] bytes). Anything else is refused with an
// error that names the file and the sizes.
func Attach(name string, data []byte, size int64, maxImageBase64 int) (model.Part, error) {
	if mt := tools.SniffImage(data); mt != "" {
		if n := tools.Base64Len(size); n > int64(maxImageBase64) || int64(len(data)) < size {
			return model.Part{}, fmt.Errorf("%s is an image of %d bytes, %d as base64, over the model's max_image_base64_bytes of %d: attach a smaller one", name, size, n, maxImageBase64)
		}
		return model.Part{Kind: model.KindImage, Name: strings.TrimPrefix(name, "@"), Image: &model.Image{MediaType: mt, Data: base64.StdEncoding.EncodeToString(data)}}, nil
	}
	if size > MaxAttachmentText || len(data) > MaxAttachmentText {
		return model.Part{}, fmt.Errorf("%s is %d bytes, over the %d bytes a text attachment may have: attach a part of it, or let the agent read it with the editor", name, size, MaxAttachmentText)
	}
	if !utf8.Valid(data) || strings.ContainsRune(string(data), 0) {
		return model.Part{}, fmt.Errorf("%s is neither text nor a png, jpeg, gif or webp image; it cannot be attached", name)
	}
	fence := "```"
	for strings.Contains(string(data), fence) {
		fence += "`"
	}
	p := model.TextPart(fmt.Sprintf("\n\n[attached file %s]\n%s\n%s\n%s", strings.TrimPrefix(name, "@"), fence, strings.TrimSuffix(string(data), "\n"), fence))
	p.Name = strings.TrimPrefix(name, "@")
	return p, nil
}
