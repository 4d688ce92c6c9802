package workspace

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// ListingLimits bound the # Workspace Files section.
type ListingLimits struct {
	Depth int // directory levels below workspace/ (a file at the top is level 1)
	Files int
	Bytes int // of the rendered list
}

// DefaultListingLimits are the specification's bounds: 4 levels, 200 files, 8 KiB.
var DefaultListingLimits = ListingLimits{Depth: 4, Files: 200, Bytes: 8 << 10}

// titleReadBytes is how much of each file is read to find its title.
const titleReadBytes = 4 << 10

// maxTitle bounds a title in the listing.
const maxTitle = 100

// ListingBlock renders the # Workspace Files section for the workspace in fsys (rooted at
// workspace/, shown to the model as dir): each visible file's path, the UTC day it last
// changed and its title, in path order. Hidden names, symlinks and other non-regular files,
// and prelude/ are skipped; a file whose start is not text is listed without a title. A
// path or title with a character that is not printable (a newline, an escape, a
// bidirectional override) is Go-quoted, so each file stays one line of plain text. Days
// rather than times, and path order rather than recency, keep the block unchanged by
// ordinary writes, so the prompt prefix stays cacheable.
func ListingBlock(fsys fs.FS, dir string, lim ListingLimits) string {
	lines, omitted := listFiles(fsys, lim)
	var b strings.Builder
	b.WriteString("# Workspace Files\n\n")
	fmt.Fprintf(&b, "Your profile's workspace, %s, holds free-form files that every agent of this profile keeps with the ordinary tools. Its visible files (path, UTC day of last change, title):\n\n", dir)
	if len(lines) == 0 && len(omitted) == 0 {
		b.WriteString("(no files yet)\n")
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\n")
	}
	if len(omitted) > 0 {
		fmt.Fprintf(&b, "[more files not listed: %s]\n", strings.Join(omitted, "; "))
	}
	fmt.Fprintf(&b, "\nThe list is not exhaustive: search %s when a note you expect is missing.\n", dir)
	return b.String()
}

// DirFS is the file system of the directory dir for [ListingBlock]: [os.DirFS], but every
// file is opened without blocking (O_NONBLOCK), so that a FIFO an agent put in the
// workspace after the walk saw a regular file there cannot hang the prompt's build.
func DirFS(dir string) fs.FS { return nonBlockingFS(dir) }

type nonBlockingFS string

func (d nonBlockingFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := os.OpenFile(filepath.Join(string(d), filepath.FromSlash(name)), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// listFiles walks fsys in path order within lim and returns the rendered lines and the
// reasons for known omissions.
func listFiles(fsys fs.FS, lim ListingLimits) (lines, omitted []string) {
	size, deeper, overFiles, overBytes := 0, 0, 0, 0
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skip what cannot be read
		}
		if p == "." {
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, ".") || (p == "prelude" && d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		depth := strings.Count(p, "/") + 1
		if d.IsDir() {
			if depth >= lim.Depth {
				deeper += countFiles(fsys, p)
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // symlinks, sockets, devices
		}
		if len(lines) >= lim.Files {
			overFiles++
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		line := "- " + oneLine(p) + " (" + info.ModTime().UTC().Format("2006-01-02") + ")"
		if t := title(fsys, p); t != "" {
			line += " " + oneLine(t)
		}
		if size+len(line)+1 > lim.Bytes {
			overBytes++
			return nil
		}
		size += len(line) + 1
		lines = append(lines, line)
		return nil
	})
	if deeper > 0 {
		omitted = append(omitted, fmt.Sprintf("%d below %d levels", deeper, lim.Depth))
	}
	if overFiles > 0 {
		omitted = append(omitted, fmt.Sprintf("%d past the first %d files", overFiles, lim.Files))
	}
	if overBytes > 0 {
		omitted = append(omitted, fmt.Sprintf("%d past the %d-byte bound of this list", overBytes, lim.Bytes))
	}
	return lines, omitted
}

// countFiles counts the visible regular files below dir, bounded so that a huge tree
// cannot stall prompt building.
func countFiles(fsys fs.FS, dir string) int {
	n := 0
	_ = fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") && p != dir {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			n++
		}
		if n >= 10_000 {
			return fs.SkipAll
		}
		return nil
	})
	return n
}

// title returns a file's first Markdown heading, else its first non-empty line, from its
// first few KiB; "" when that is not text.
func title(fsys fs.FS, p string) string {
	f, err := fsys.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return "" // replaced since the walk saw it
	}
	head := make([]byte, titleReadBytes)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if bytes.IndexByte(head, 0) >= 0 {
		return ""
	}
	if len(head) == titleReadBytes { // a rune may be cut at the end
		for i := 0; i < utf8.UTFMax && len(head) > 0 && !utf8.Valid(head); i++ {
			head = head[:len(head)-1]
		}
	}
	if !utf8.Valid(head) {
		return ""
	}
	var first []byte
	for rest := head; len(rest) > 0; {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte{'\n'})
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] == '#' && path.Ext(p) == ".md" {
			if h := bytes.TrimSpace(bytes.TrimLeft(line, "#")); len(h) > 0 {
				return clip(string(h))
			}
		}
		if first == nil {
			first = line
		}
	}
	return clip(string(first))
}

func clip(s string) string {
	if r := []rune(s); len(r) > maxTitle {
		return string(r[:maxTitle-1]) + "…"
	}
	return s
}
