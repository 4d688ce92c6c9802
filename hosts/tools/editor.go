package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"myco/agent/model"
)

// EditorOptions configures the editor. Zero values take the defaults.
type EditorOptions struct {
	MaxView int // largest view output in bytes; default 256 KiB
}

// Editor is str_replace_based_edit_tool: view, create, str_replace and insert, with read
// stamps that make an edit require a current view. Safe for concurrent use.
type Editor struct {
	o EditorOptions

	mu     sync.Mutex                        // guards stamps
	stamps map[string]map[string]Fingerprint // owner -> path -> what the owner last saw
}

// Fingerprint identifies a file's contents as an owner last saw them.
type Fingerprint struct {
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
	SHA256  string    `json:"sha256"`
}

// NewEditor returns the editor.
func NewEditor(o EditorOptions) *Editor {
	if o.MaxView <= 0 {
		o.MaxView = 256 << 10
	}
	return &Editor{o: o, stamps: map[string]map[string]Fingerprint{}}
}

// Name returns "str_replace_based_edit_tool".
func (e *Editor) Name() string { return "str_replace_based_edit_tool" }

// Spec describes the tool to the model.
func (e *Editor) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: e.Name(),
		Description: fmt.Sprintf(`View and edit files. Paths are absolute.
"view": a file with numbered lines (optional view_range [start, end], end -1 for the end of the file), or a directory listing two levels deep. Output over %d KiB is rejected (a single long line counts): view a smaller range, or use bash with bounded output.
"create": write file_text to a new file (parent directories are created) or over one you have viewed.
"str_replace": replace old_str, which must occur exactly once, with new_str.
"insert": insert insert_text after line insert_line (0 for the top).
Editing an existing file requires a successful earlier view of it that still matches the file on disk; view it again after it changes.`, e.o.MaxView>>10),
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"command":{"type":"string","enum":["view","create","str_replace","insert"]},` +
			`"path":{"type":"string","description":"absolute path"},` +
			`"view_range":{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":2},` +
			`"file_text":{"type":"string"},` +
			`"old_str":{"type":"string"},` +
			`"new_str":{"type":"string"},` +
			`"insert_line":{"type":"integer","minimum":0},` +
			`"insert_text":{"type":"string"}` +
			`},"required":["command","path"],"additionalProperties":false}`),
	}
}

type editorInput struct {
	Command    string  `json:"command"`
	Path       string  `json:"path"`
	ViewRange  []int   `json:"view_range"`
	FileText   *string `json:"file_text"`
	OldStr     *string `json:"old_str"`
	NewStr     *string `json:"new_str"`
	InsertLine *int    `json:"insert_line"`
	InsertText *string `json:"insert_text"`
}

// Call runs one editor command for owner.
func (e *Editor) Call(ctx context.Context, owner string, input json.RawMessage) Result {
	var in editorInput
	if err := decodeStrict(input, &in); err != nil {
		return Errorf("editor: %v", err)
	}
	if in.Path == "" {
		return Errorf("editor: path is required")
	}
	if !filepath.IsAbs(in.Path) {
		return Errorf("editor: path %q is not absolute", in.Path)
	}
	path := filepath.Clean(in.Path)
	switch in.Command {
	case "view":
		return e.view(owner, path, in.ViewRange)
	case "create":
		if in.FileText == nil {
			return Errorf("editor: create needs file_text")
		}
		return e.create(owner, path, *in.FileText)
	case "str_replace":
		if in.OldStr == nil {
			return Errorf("editor: str_replace needs old_str")
		}
		if *in.OldStr == "" {
			return Errorf("editor: old_str is empty; it must be text that occurs exactly once in the file")
		}
		newStr := ""
		if in.NewStr != nil {
			newStr = *in.NewStr
		}
		return e.replace(owner, path, *in.OldStr, newStr)
	case "insert":
		if in.InsertLine == nil || in.InsertText == nil {
			return Errorf("editor: insert needs insert_line and insert_text")
		}
		return e.insert(owner, path, *in.InsertLine, *in.InsertText)
	case "":
		return Errorf("editor: command is required (view, create, str_replace or insert)")
	}
	return Errorf("editor: unknown command %q (want view, create, str_replace or insert)", in.Command)
}

func fingerprint(path string, data []byte, info fs.FileInfo) Fingerprint {
	sum := sha256.Sum256(data)
	return Fingerprint{Path: path, Size: info.Size(), ModTime: info.ModTime(), SHA256: fmt.Sprintf("%x", sum)}
}

func (e *Editor) stamp(owner string, fp Fingerprint) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.stamps[owner]
	if m == nil {
		m = map[string]Fingerprint{}
		e.stamps[owner] = m
	}
	m[fp.Path] = fp
}

// check verifies that owner's stamp of path matches the file now, returning its contents.
func (e *Editor) check(owner, path string) ([]byte, fs.FileInfo, error) {
	data, info, err := readRegular(path)
	if err != nil {
		return nil, nil, err
	}
	e.mu.Lock()
	fp, ok := e.stamps[owner][path]
	e.mu.Unlock()
	if !ok {
		return nil, nil, fmt.Errorf("%s has not been viewed in this session; view it first, then edit", path)
	}
	now := fingerprint(path, data, info)
	if now.SHA256 != fp.SHA256 {
		return nil, nil, fmt.Errorf("%s changed since it was last viewed (%d bytes then, %d now); view it again before editing", path, fp.Size, now.Size)
	}
	return data, info, nil
}

func readRegular(path string) ([]byte, fs.FileInfo, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return data, info, nil
}

func (e *Editor) view(owner, path string, vr []int) Result {
	info, err := os.Stat(path)
	if err != nil {
		return Errorf("editor: %v", err)
	}
	if info.IsDir() {
		if vr != nil {
			return Errorf("editor: view_range applies to files, and %s is a directory", path)
		}
		return e.listDir(path)
	}
	const maxRead = 64 << 20
	if info.Size() > maxRead {
		return Errorf("editor: %s is %d bytes, over the %d bytes the editor reads; use bash (head, sed -n, rg) to read parts of it", path, info.Size(), maxRead)
	}
	data, info, err := readRegular(path)
	if err != nil {
		return Errorf("editor: %v", err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	start, end := 1, len(lines)
	if vr != nil {
		if len(vr) != 2 {
			return Errorf("editor: view_range must be [start, end]")
		}
		start, end = vr[0], vr[1]
		if end == -1 {
			end = len(lines)
		}
		if start < 1 || start > max(len(lines), 1) || end < start || end > len(lines) {
			return Errorf("editor: view_range [%d, %d] is outside the file's %d lines", vr[0], vr[1], len(lines))
		}
	}
	var out bytes.Buffer
	for i := start; i <= end && i <= len(lines); i++ {
		fmt.Fprintf(&out, "%6d\t%s", i, lines[i-1])
		if !strings.HasSuffix(lines[i-1], "\n") {
			out.WriteByte('\n')
		}
		if out.Len() > e.o.MaxView {
			break
		}
	}
	if out.Len() > e.o.MaxView {
		return Errorf("editor: viewing %s would print more than %d bytes (the file is %d bytes, %d lines); view a smaller view_range, or use bash with bounded output for long lines", path, e.o.MaxView, len(data), len(lines))
	}
	e.stamp(owner, fingerprint(path, data, info))
	if len(lines) == 0 {
		return Result{Text: fmt.Sprintf("%s is empty", path)}
	}
	return Result{Text: out.String()}
}

func (e *Editor) listDir(root string) Result {
	var entries []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		depth := strings.Count(rel, string(filepath.Separator)) + 1
		name := rel
		if d.IsDir() {
			name += "/"
		}
		entries = append(entries, name)
		if d.IsDir() && depth >= 2 {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return Errorf("editor: list %s: %v", root, err)
	}
	sort.Strings(entries)
	text := fmt.Sprintf("%s (two levels, hidden entries skipped):\n%s\n", root, strings.Join(entries, "\n"))
	if len(text) > e.o.MaxView {
		return Errorf("editor: the listing of %s is %d bytes, over %d; list a subdirectory, or use bash (ls, find) with bounded output", root, len(text), e.o.MaxView)
	}
	return Result{Text: text}
}

func (e *Editor) create(owner, path, text string) Result {
	if _, err := os.Lstat(path); err == nil {
		if _, _, err := e.check(owner, path); err != nil {
			return Errorf("editor: %s exists: %v", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Errorf("editor: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return Errorf("editor: %v", err)
	}
	if err := e.write(owner, path, []byte(text), 0o644); err != nil {
		return Errorf("editor: %v", err)
	}
	return Result{Text: fmt.Sprintf("created %s (%d bytes)", path, len(text))}
}

func (e *Editor) replace(owner, path, oldStr, newStr string) Result {
	data, info, err := e.check(owner, path)
	if err != nil {
		return Errorf("editor: %v", err)
	}
	switch n := strings.Count(string(data), oldStr); n {
	case 1:
	case 0:
		return Errorf("editor: old_str does not occur in %s; nothing was changed (view the file to copy the exact text, whitespace included)", path)
	default:
		return Errorf("editor: old_str occurs %d times in %s; nothing was changed (include more surrounding text so it matches exactly once)", n, path)
	}
	i := strings.Index(string(data), oldStr)
	out := string(data[:i]) + newStr + string(data[i+len(oldStr):])
	if err := e.write(owner, path, []byte(out), info.Mode().Perm()); err != nil {
		return Errorf("editor: %v", err)
	}
	line := strings.Count(string(data[:i]), "\n") + 1
	return Result{Text: fmt.Sprintf("edited %s at line %d", path, line)}
}

func (e *Editor) insert(owner, path string, at int, text string) Result {
	data, info, err := e.check(owner, path)
	if err != nil {
		return Errorf("editor: %v", err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if at < 0 || at > len(lines) {
		return Errorf("editor: insert_line %d is outside 0..%d (the file's line count)", at, len(lines))
	}
	if at > 0 && !strings.HasSuffix(lines[at-1], "\n") {
		lines[at-1] += "\n"
	}
	if !strings.HasSuffix(text, "\n") && at < len(lines) {
		text += "\n"
	}
	out := strings.Join(lines[:at], "") + text + strings.Join(lines[at:], "")
	if err := e.write(owner, path, []byte(out), info.Mode().Perm()); err != nil {
		return Errorf("editor: %v", err)
	}
	return Result{Text: fmt.Sprintf("inserted the text after line %d of %s", at, path)}
}

// write replaces path atomically (a temporary file in the same directory, then a rename)
// and refreshes owner's stamp.
func (e *Editor) write(owner, path string, data []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".myco-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	e.stamp(owner, fingerprint(path, data, info))
	return nil
}

// Inventory returns the owner's read fingerprints, by path.
func (e *Editor) Inventory(owner string) any {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Fingerprint, 0, len(e.stamps[owner]))
	for _, fp := range e.stamps[owner] {
		out = append(out, fp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Release forgets the owner's stamps.
func (e *Editor) Release(owner string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.stamps, owner)
}
