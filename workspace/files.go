package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Files is read-only access to a profile's workspace directory for the browser's viewer:
// the only way the server reaches workspace files. Every name is resolved inside the
// directory through an [os.Root], so neither "..", an absolute path nor a symlink can leave
// it, and only regular files and directories are ever opened. The rules apply to the path
// with every symlink resolved: a hidden name anywhere in it (envlink -> .env, gitdir ->
// .git) is refused as a hidden name in the path itself is. It is safe for concurrent use.
//
// Each call opens the directory anew, so a workspace removed and recreated while the server
// runs is seen as it is now, and there is nothing to close.
type Files struct {
	dir string
	// deny are directories inside dir, relative to it and resolved, whose contents are
	// never shown.
	deny []string
}

// maxLinks bounds the symlinks followed in resolving one name, as the kernel's ELOOP does.
const maxLinks = 40

// ErrIsDir reports [Files.Open] of a directory; list it with [Files.ReadDir].
var ErrIsDir = errors.New("workspace: is a directory")

// Listing bounds: what one ReadDir returns and how many names it looks at.
const (
	maxListing = 1000
	maxScan    = 100_000
)

// OpenFiles returns the read-only capability over the workspace directory dir, an absolute
// path. dir need not exist yet: until it does, its listing is empty and every file is not
// found. It is an error for dir to be something other than a directory. Nothing inside a
// directory of deny (absolute paths, such as myco's home in a session's directory) is ever
// shown, nor is that directory itself.
func OpenFiles(dir string, deny ...string) (*Files, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("open the workspace %q: the path must be absolute", dir)
	}
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("open the workspace: %w", err)
	case !info.IsDir():
		return nil, fmt.Errorf("open the workspace %s: not a directory", dir)
	}
	f := &Files{dir: filepath.Clean(dir)}
	real, err := filepath.EvalSymlinks(f.dir)
	if err != nil {
		real = f.dir
	}
	for _, d := range deny {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		if rel, err := filepath.Rel(real, filepath.Clean(d)); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			f.deny = append(f.deny, filepath.ToSlash(rel))
		}
	}
	return f, nil
}

// Dir returns the workspace directory.
func (f *Files) Dir() string { return f.dir }

// Item describes a regular file or a directory of the workspace.
type Item struct {
	Name    string // base name; "." for the workspace itself
	Size    int64  // 0 for a directory
	ModTime time.Time
	IsDir   bool
}

// File is an open regular file of the workspace: read it, seek it or pass it to
// http.ServeContent with Info.ModTime, after setting Content-Type to Type (never let the
// server sniff). Caller must Close.
type File struct {
	*os.File
	Info Item
	Type string // from [ContentType]
	Kind Kind
}

// Listing is one directory's contents.
type Listing struct {
	Items []Item // directories first, then files, each by name (case folded)
	// More reports entries left out: past the first 1,000, or in a directory of more than
	// 100,000 entries (then the 1,000 are the first of the 100,000 read, sorted).
	More bool
}

// Stat describes the regular file or directory name. name is a slash-separated path
// relative to the workspace as it came from a URL; "" and "." are the workspace itself, and
// one trailing slash is allowed on a directory. A name that is not in that form (a leading slash, an empty,
// "." or ".." element, a backslash, a NUL), a hidden element (a leading dot), a path that
// leaves the workspace through a symlink, a FIFO, a socket, a device or anything missing
// or unreadable all give the same error, for which errors.Is(err, fs.ErrNotExist) holds:
// one "not found" for every refusal. It never blocks on a special file.
func (f *Files) Stat(name string) (Item, error) {
	root, clean, err := f.open(name)
	if err != nil {
		return Item{}, err
	}
	defer root.Close()
	base := path.Base(clean)
	if clean, err = f.resolve(root, name, clean); err != nil {
		return Item{}, err
	}
	info, err := root.Stat(clean) // follows symlinks only while they stay inside
	if err != nil {
		return Item{}, notFound(name, err)
	}
	if !info.IsDir() && (!info.Mode().IsRegular() || strings.HasSuffix(name, "/")) {
		return Item{}, notFound(name, errNotRegular)
	}
	return item(base, info), nil
}

// Open opens the regular file name (see [Files.Stat] for the names it refuses) and
// determines its content type from its name and its first bytes. A directory gives
// [ErrIsDir]. Caller must Close the file.
func (f *Files) Open(name string) (*File, error) {
	root, clean, err := f.open(name)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	shown := clean // the name the content type comes from, as the link reads it
	if clean, err = f.resolve(root, name, clean); err != nil {
		return nil, err
	}
	info, err := root.Stat(clean)
	if err != nil {
		return nil, notFound(name, err)
	}
	if info.IsDir() {
		return nil, fmt.Errorf("open %s: %w", oneLine(name), ErrIsDir)
	}
	if !info.Mode().IsRegular() || strings.HasSuffix(name, "/") {
		return nil, notFound(name, errNotRegular)
	}
	// O_NONBLOCK: a FIFO swapped in since the stat opens at once and is refused below.
	fh, err := root.OpenFile(clean, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, notFound(name, err)
	}
	opened, err := fh.Stat()
	if err != nil || !opened.Mode().IsRegular() || !os.SameFile(info, opened) {
		fh.Close()
		return nil, notFound(name, errNotRegular)
	}
	head := make([]byte, sniffBytes)
	n, err := fh.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		fh.Close()
		return nil, fmt.Errorf("read workspace file %s: %w", oneLine(name), err)
	}
	typ, kind := ContentType(shown, head[:n])
	return &File{File: fh, Info: item(path.Base(shown), opened), Type: typ, Kind: kind}, nil
}

// ReadDir lists the directory name (see [Files.Stat] for the names it refuses): its
// regular files and directories, and the symlinks among them that resolve to one inside the
// workspace, described as their targets. Hidden names (a leading dot), names with a
// backslash or that are not UTF-8 (Stat and Open refuse both), broken or escaping symlinks
// and special files are left out. The listing of a
// workspace that does not exist yet is empty.
func (f *Files) ReadDir(name string) (Listing, error) {
	root, clean, err := f.open(name)
	if err != nil {
		if clean == "." && errors.Is(err, fs.ErrNotExist) {
			return Listing{}, nil
		}
		return Listing{}, err
	}
	defer root.Close()
	if clean, err = f.resolve(root, name, clean); err != nil {
		return Listing{}, err
	}
	if info, err := root.Stat(clean); err != nil {
		return Listing{}, notFound(name, err)
	} else if !info.IsDir() {
		return Listing{}, notFound(name, errors.New("not a directory"))
	}
	d, err := root.OpenFile(clean, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Listing{}, notFound(name, err)
	}
	defer d.Close()

	type candidate struct {
		name  string
		isDir bool
		info  fs.FileInfo // set for a symlink, stat'ed through the root
	}
	var cands []candidate
	var l Listing
	for scanned := 0; ; {
		des, err := d.ReadDir(1024)
		for _, de := range des {
			n := de.Name()
			if strings.HasPrefix(n, ".") || strings.ContainsRune(n, '\\') || !utf8.ValidString(n) {
				continue // hidden, or a name Stat and Open refuse
			}
			if f.denied(path.Join(clean, n)) {
				continue
			}
			switch t := de.Type(); {
			case t.IsDir():
				cands = append(cands, candidate{name: n, isDir: true})
			case t.IsRegular():
				cands = append(cands, candidate{name: n})
			case t&fs.ModeSymlink != 0:
				// Listed as its target, when that is a file or directory that the viewer
				// would show: inside, and with no hidden name on the way.
				target, err := f.resolve(root, path.Join(clean, n), path.Join(clean, n))
				if err != nil {
					continue
				}
				info, err := root.Stat(target)
				if err == nil && (info.IsDir() || info.Mode().IsRegular()) {
					cands = append(cands, candidate{name: n, isDir: info.IsDir(), info: info})
				}
			}
		}
		scanned += len(des)
		if errors.Is(err, io.EOF) || len(des) == 0 {
			break
		}
		if err != nil {
			return Listing{}, fmt.Errorf("list workspace directory %s: %w", oneLine(name), err)
		}
		if scanned >= maxScan {
			l.More = true
			break
		}
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.isDir != b.isDir {
			if a.isDir {
				return -1
			}
			return 1
		}
		if c := strings.Compare(strings.ToLower(a.name), strings.ToLower(b.name)); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	if len(cands) > maxListing {
		cands, l.More = cands[:maxListing], true
	}
	l.Items = make([]Item, 0, len(cands))
	for _, c := range cands {
		info := c.info
		if info == nil {
			if info, err = root.Lstat(path.Join(clean, c.name)); err != nil {
				continue // removed since the listing
			}
			if !info.IsDir() && !info.Mode().IsRegular() {
				continue // replaced since the listing
			}
		}
		l.Items = append(l.Items, item(c.name, info))
	}
	return l, nil
}

// open checks name and opens the workspace root; it returns the cleaned name, "." for the
// workspace itself.
func (f *Files) open(name string) (*os.Root, string, error) {
	clean, err := cleanName(name)
	if err != nil {
		return nil, clean, err
	}
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		return nil, clean, notFound(name, err)
	}
	return root, clean, nil
}

// resolve returns clean (the cleaned form of name) with every symlink in it resolved,
// relative to the root, or the not-found error of name when the resolved path would be
// refused: a symlink whose target is absolute, climbs out of the root or loops, a hidden
// name met on the way (a link's target included), or a path inside a denied directory.
// The viewer then works on the resolved path, through the root, so that what it checked
// is what it opens (a symlink swapped in between is still held inside the root).
func (f *Files) resolve(root *os.Root, name, clean string) (string, error) {
	if clean == "." {
		return clean, nil
	}
	var done []string
	todo := strings.Split(clean, "/")
	for links := 0; len(todo) > 0; {
		elem := todo[0]
		todo = todo[1:]
		switch {
		case elem == "" || elem == ".":
			continue
		case elem == "..":
			if len(done) == 0 {
				return "", notFound(name, errors.New("a symlink leads out of the directory"))
			}
			done = done[:len(done)-1]
			continue
		case strings.HasPrefix(elem, "."):
			return "", notFound(name, fmt.Errorf("the path resolves through the hidden name %q", elem))
		}
		cur := path.Join(path.Join(done...), elem)
		info, err := root.Lstat(cur)
		if err != nil {
			return "", notFound(name, err)
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			done = append(done, elem)
			continue
		}
		if links++; links > maxLinks {
			return "", notFound(name, errors.New("too many symlinks"))
		}
		target, err := root.Readlink(cur)
		if err != nil {
			return "", notFound(name, err)
		}
		if target == "" || strings.HasPrefix(target, "/") {
			return "", notFound(name, fmt.Errorf("the symlink %s has an absolute target", cur))
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	out := path.Join(done...)
	if out == "" {
		out = "."
	}
	if f.denied(out) {
		return "", notFound(name, errors.New("inside a directory the viewer does not show"))
	}
	return out, nil
}

// denied reports whether rel, a resolved path relative to the root, is or is inside one
// of the denied directories.
func (f *Files) denied(rel string) bool {
	for _, d := range f.deny {
		if d == "." || rel == d || strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

// cleanName returns name in the canonical form os.Root is given, or a not-found error
// for a name that is not in it. Nothing is rewritten: a name that needs cleaning is refused.
func cleanName(name string) (string, error) {
	if strings.HasPrefix(name, "/") {
		return "", notFound(name, errors.New("an absolute path"))
	}
	clean := strings.TrimSuffix(name, "/")
	if clean == "" {
		return ".", nil
	}
	if clean == "." {
		return clean, nil
	}
	if !fs.ValidPath(clean) || strings.ContainsAny(clean, "\\\x00") {
		return "", notFound(name, errors.New("not a clean relative path"))
	}
	for elem := range strings.SplitSeq(clean, "/") {
		if strings.HasPrefix(elem, ".") {
			return "", notFound(name, errors.New("a hidden name"))
		}
	}
	return clean, nil
}

func item(name string, info fs.FileInfo) Item {
	it := Item{Name: name, ModTime: info.ModTime(), IsDir: info.IsDir()}
	if !it.IsDir {
		it.Size = info.Size()
	}
	return it
}

// notFoundError is every refusal of a workspace name: it is fs.ErrNotExist to errors.Is,
// and keeps the cause only for the log (it does not unwrap to it, so a permission error
// cannot be told apart from a missing file).
type notFoundError struct {
	name  string
	cause error
}

func notFound(name string, cause error) error { return &notFoundError{name: name, cause: cause} }

func (e *notFoundError) Error() string {
	return fmt.Sprintf("workspace file %s not found: %s", oneLine(e.name), e.cause.Error())
}

func (e *notFoundError) Is(target error) bool { return target == fs.ErrNotExist }
