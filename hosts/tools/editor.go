package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"myco.dev/agent/model"
)

// EditorOptions configures the editor. Zero values take the defaults.
type EditorOptions struct {
	MaxView int // largest view output in bytes; default 256 KiB
	// Guard, when not nil, refuses paths in myco's own files; nil allows every path.
	Guard *Guard
	// Dirs, when not nil, gives the directory against which the refusal of a relative
	// path names the absolute path probably meant (the caller's bash session's current
	// directory); without it, or when the caller has none, the session's directory
	// ([WithWorkDir]), else the host process's working directory.
	Dirs WorkDirs
}

// Editor is str_replace_based_edit_tool: view, create, str_replace and insert. Editing an
// existing file needs a read stamp: an earlier successful view of it by the same owner
// that still matches the file on disk. Safe for concurrent use.
type Editor struct {
	o EditorOptions

	editMu sync.Mutex // serializes edits, so a stamp check and its write are one step

	mu     sync.Mutex                        // guards stamps
	stamps map[string]map[string]Fingerprint // owner -> path -> what the owner last saw
}

// Fingerprint is a read stamp: a file's contents as an owner last saw them.
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
		Description: fmt.Sprintf(`View, create and edit text files. Paths must be absolute.
command=view: a file as numbered lines (like cat -n; view_range [start, end] selects lines, end -1 meaning the end of the file), or a directory listed two levels deep without hidden entries. A view whose output would exceed %d bytes is rejected (a single long line counts): view a smaller range, or use bash with bounded output.
command=create: write file_text to path; missing parent directories are created.
command=str_replace: replace old_str, which must occur exactly once (whitespace included), with new_str (empty deletes it).
command=insert: insert insert_text after line insert_line (0 inserts at the top).
Editing an existing file (str_replace, insert, create over it) requires that you viewed it earlier and that it has not changed since; after an outside change, view it again. Writes are atomic and keep the file's mode.`, e.o.MaxView) + e.o.Guard.describe(),
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert"]},
    "path": {"type": "string", "description": "Absolute path of the file or directory."},
    "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2, "description": "view: [start, end] lines, 1-based and inclusive; end -1 reads to the end."},
    "file_text": {"type": "string", "description": "create: the whole content of the file."},
    "old_str": {"type": "string", "description": "str_replace: the exact text to replace; it must occur once."},
    "new_str": {"type": "string", "description": "str_replace: the replacement; empty or omitted deletes old_str."},
    "insert_line": {"type": "integer", "minimum": 0, "description": "insert: the line after which to insert; 0 for the top."},
    "insert_text": {"type": "string", "description": "insert: the text to insert."}
  },
  "required": ["command", "path"],
  "additionalProperties": false
}`),
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

var editorFields = []string{"command", "path", "view_range", "file_text", "old_str", "new_str", "insert_line", "insert_text"}

// relative refuses the relative path of a command, naming the absolute path it probably
// meant: the path resolved as view_image would resolve it.
func (e *Editor) relative(ctx context.Context, owner, command, path string) Result {
	p, err := resolve(ctx, e.o.Dirs, owner, path)
	if err != nil {
		return Errorf("path %q is not absolute; give the full path", path)
	}
	exists := ""
	if _, err := os.Lstat(p.abs); err != nil && command != "create" {
		exists = ", which does not exist"
	}
	return Errorf("path %q is not absolute; str_replace_based_edit_tool takes absolute paths only. Use %s%s", path, p.shown, exists)
}

// Call runs one editor command for owner.
func (e *Editor) Call(ctx context.Context, owner string, input json.RawMessage) Result {
	var in editorInput
	if err := decodeInput(input, &in, editorFields, nil); err != nil {
		return Errorf("%v", err)
	}
	takes := map[string][]string{
		"view":        {"view_range"},
		"create":      {"file_text"},
		"str_replace": {"old_str", "new_str"},
		"insert":      {"insert_line", "insert_text"},
	}
	switch _, ok := takes[in.Command]; {
	case in.Command == "":
		return Errorf("command is required: view, create, str_replace or insert")
	case !ok:
		return Errorf("unknown command %q; the commands are view, create, str_replace and insert", in.Command)
	}
	for name, set := range map[string]bool{
		"view_range": in.ViewRange != nil, "file_text": in.FileText != nil, "old_str": in.OldStr != nil,
		"new_str": in.NewStr != nil, "insert_line": in.InsertLine != nil, "insert_text": in.InsertText != nil,
	} {
		if set && !slices.Contains(takes[in.Command], name) {
			return Errorf("command=%s does not take %s", in.Command, name)
		}
	}
	if in.Path == "" {
		return Errorf("path is required")
	}
	if !filepath.IsAbs(in.Path) {
		return e.relative(ctx, owner, in.Command, in.Path)
	}
	path, err := realPath(filepath.Clean(in.Path))
	if err != nil {
		return Errorf("%v", err)
	}
	guard := e.o.Guard.resolved()
	if err := guard.check(e.Name(), filepath.Clean(in.Path), path, in.Command != "view"); err != nil {
		return Errorf("%v", err)
	}
	switch in.Command {
	case "view":
		return e.view(owner, path, in.ViewRange, guard)
	case "create":
		if in.FileText == nil {
			return Errorf("command=create needs file_text")
		}
		return e.create(owner, path, *in.FileText)
	case "str_replace":
		if in.OldStr == nil || *in.OldStr == "" {
			return Errorf("command=str_replace needs old_str: text that occurs exactly once in the file")
		}
		return e.replace(owner, path, *in.OldStr, deref(in.NewStr))
	default:
		if in.InsertLine == nil || in.InsertText == nil {
			return Errorf("command=insert needs insert_line and insert_text")
		}
		return e.insert(owner, path, *in.InsertLine, *in.InsertText)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func fingerprint(path string, data []byte, info fs.FileInfo) Fingerprint {
	sum := sha256.Sum256(data)
	return Fingerprint{Path: path, Size: info.Size(), ModTime: info.ModTime(), SHA256: hex.EncodeToString(sum[:])}
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

// check verifies that owner's stamp of path matches the file on disk and returns the
// file's contents.
func (e *Editor) check(owner, path string) ([]byte, fs.FileInfo, error) {
	data, info, err := readRegular(path)
	if err != nil {
		return nil, nil, err
	}
	e.mu.Lock()
	fp, ok := e.stamps[owner][path]
	e.mu.Unlock()
	if !ok {
		return nil, nil, fmt.Errorf("%s has not been viewed in this session; view it (command=view) before editing it", path)
	}
	now := fingerprint(path, data, info)
	if now.Size != fp.Size || !now.ModTime.Equal(fp.ModTime) || now.SHA256 != fp.SHA256 {
		return nil, nil, fmt.Errorf("%s changed since it was last viewed (%d bytes, modified %s then; %d bytes, modified %s now); view it again before editing",
			path, fp.Size, fp.ModTime.Format(time.RFC3339Nano), now.Size, now.ModTime.Format(time.RFC3339Nano))
	}
	return data, info, nil
}

// maxRead bounds the files the editor reads whole.
const maxRead = 64 << 20

// readRegular reads a regular file whole (see [openRegular]).
func readRegular(path string) ([]byte, fs.FileInfo, error) {
	f, info, err := openRegular(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	tooBig := func(size int64) error {
		return fmt.Errorf("%s is %d bytes, over the %d bytes the editor reads; use bash (head, sed -n, rg) on it", path, size, maxRead)
	}
	if info.Size() > maxRead {
		return nil, nil, tooBig(info.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRead+1)) // it may have grown
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, bareErr(err))
	}
	if len(data) > maxRead {
		return nil, nil, tooBig(int64(len(data)))
	}
	return data, info, nil
}

func (e *Editor) create(owner, path, text string) Result {
	e.editMu.Lock()
	defer e.editMu.Unlock()
	perm, keep := fs.FileMode(0o666), false // a new file: 0666 less the umask, as the kernel applies it
	verb := "created"
	switch info, err := os.Stat(path); {
	case err == nil:
		if info.IsDir() {
			return Errorf("%s is a directory", path)
		}
		if _, info, err = e.check(owner, path); err != nil {
			return Errorf("%s exists and create would overwrite it: %v", path, err)
		}
		perm, keep, verb = info.Mode().Perm(), true, "overwrote"
	case !errors.Is(err, fs.ErrNotExist):
		return Errorf("%v", err)
	default:
		if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil { // less the umask
			return Errorf("%v", err)
		}
	}
	if err := e.write(owner, path, []byte(text), perm, keep); err != nil {
		return Errorf("%v", err)
	}
	return Result{Text: fmt.Sprintf("%s %s (%d bytes, %d lines)", verb, path, len(text), len(splitLines(text)))}
}

func (e *Editor) replace(owner, path, oldStr, newStr string) Result {
	e.editMu.Lock()
	defer e.editMu.Unlock()
	data, info, err := e.check(owner, path)
	if err != nil {
		return Errorf("%v", err)
	}
	text := string(data)
	switch n := strings.Count(text, oldStr); n {
	case 1:
	case 0:
		return Errorf("old_str was not found in %s (0 matches); nothing was changed. It must match exactly once, whitespace and indentation included: view the file to copy the exact text", path)
	default:
		return Errorf("old_str matches %d times in %s on lines %s; nothing was changed. Include more surrounding lines so that it matches exactly once", n, path, matchLines(text, oldStr))
	}
	i := strings.Index(text, oldStr)
	out := text[:i] + newStr + text[i+len(oldStr):]
	if err := e.write(owner, path, []byte(out), info.Mode().Perm(), true); err != nil {
		return Errorf("%v", err)
	}
	first := strings.Count(text[:i], "\n") + 1
	last := first + strings.Count(newStr, "\n")
	return Result{Text: fmt.Sprintf("edited %s: replaced 1 occurrence at line %d\n%s", path, first, snippet(out, first, last))}
}

// matchLines lists the line numbers where sub starts in s: "3, 7".
func matchLines(s, sub string) string {
	var lines []string
	for off := 0; ; {
		i := strings.Index(s[off:], sub)
		if i < 0 || len(lines) == 10 {
			break
		}
		if n := fmt.Sprint(strings.Count(s[:off+i], "\n") + 1); len(lines) == 0 || lines[len(lines)-1] != n {
			lines = append(lines, n)
		}
		off += i + len(sub)
	}
	return strings.Join(lines, ", ")
}

func (e *Editor) insert(owner, path string, at int, text string) Result {
	e.editMu.Lock()
	defer e.editMu.Unlock()
	data, info, err := e.check(owner, path)
	if err != nil {
		return Errorf("%v", err)
	}
	lines := splitLines(string(data))
	if at < 0 || at > len(lines) {
		return Errorf("insert_line %d is outside 0..%d (%s has %d lines)", at, len(lines), path, len(lines))
	}
	if at > 0 && !strings.HasSuffix(lines[at-1], "\n") {
		lines[at-1] += "\n"
	}
	if !strings.HasSuffix(text, "\n") && text != "" {
		text += "\n"
	}
	out := strings.Join(lines[:at], "") + text + strings.Join(lines[at:], "")
	if err := e.write(owner, path, []byte(out), info.Mode().Perm(), true); err != nil {
		return Errorf("%v", err)
	}
	n := len(splitLines(text))
	return Result{Text: fmt.Sprintf("inserted %d lines after line %d of %s\n%s", n, at, path, snippet(out, at+1, at+n))}
}

// snippet shows lines first..last of text, numbered, with a few lines of context.
func snippet(text string, first, last int) string {
	const context, maxBytes = 3, 4 << 10
	lines := splitLines(text)
	var sb strings.Builder
	for i := max(1, first-context); i <= min(len(lines), last+context); i++ {
		if sb.Len() > maxBytes {
			sb.WriteString("[... snippet cut; view the file for the rest ...]\n")
			break
		}
		fmt.Fprintf(&sb, "%6d\t%s", i, strings.TrimSuffix(lines[i-1], "\n")+"\n")
	}
	return sb.String()
}

// splitLines splits s after each newline; a final line without one is kept.
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// bareErr is err without the operation and temporary file name an *os.PathError or
// *os.LinkError adds: the message names the file the user knows, once.
func bareErr(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	if le, ok := errors.AsType[*os.LinkError](err); ok {
		return le.Err
	}
	return err
}

// write replaces path atomically (a temporary file in the same directory, then a rename)
// and refreshes owner's stamp. The file is created with perm less the umask, so a new file
// gets what any program creating it would; with keep (an existing file) its mode is then
// set to perm exactly. Creating it with perm, not a wider mode, means the new contents are
// never more exposed than the old.
func (e *Editor) write(owner, path string, data []byte, perm fs.FileMode, keep bool) error {
	f, err := createTemp(filepath.Dir(path), "."+filepath.Base(path)+".myco-", perm)
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // fails harmlessly after the rename
	_, err = f.Write(data)
	if err == nil && keep {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, bareErr(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, bareErr(err))
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	e.stamp(owner, fingerprint(path, data, info))
	return nil
}

// Stamps returns owner's read stamps, by path.
func (e *Editor) Stamps(owner string) []Fingerprint {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Fingerprint, 0, len(e.stamps[owner]))
	for _, fp := range e.stamps[owner] {
		out = append(out, fp)
	}
	slices.SortFunc(out, func(a, b Fingerprint) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Inventory adds [Editor.Stamps] to r, for the inventory.
func (e *Editor) Inventory(owner string, r *Resources) { r.Editor = e.Stamps(owner) }

// Release forgets owner's stamps.
func (e *Editor) Release(owner string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.stamps, owner)
}
