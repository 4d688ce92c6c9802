package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// GuidanceFiles are the project guidance file names read from the working directory, its
// git root and each directory between them, in this order.
var GuidanceFiles = []string{"AGENTS.md", "CLAUDE.md"}

// maxGuidanceBytes bounds one guidance file in the prompt; a longer one is cut with a
// marker that says where the rest is, and no more than this is read.
const maxGuidanceBytes = 64 << 10

// GitRoot returns the nearest directory at or above dir that holds .git (a directory, or a
// file as in worktrees and submodules), or "" when there is none.
func GitRoot(dir string) string {
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

// Guidance is the project guidance found for one working directory.
type Guidance struct {
	// Block is the # Project Guidance section, "" when there is no guidance.
	Block string
	// Skipped lists the guidance files that exist but were left out, and why, for the log.
	Skipped []GuidanceSkip
}

// GuidanceSkip is a guidance file left out of the prompt.
type GuidanceSkip struct {
	Path   string
	Reason string
}

// GuidanceBlock returns [LoadGuidance](wd).Block.
func GuidanceBlock(wd string) string { return LoadGuidance(wd).Block }

// LoadGuidance reads the project guidance for the working directory wd: AGENTS.md and
// CLAUDE.md of the git root, then of each directory below it down to wd (as Codex does),
// each under a [project guidance PATH] label. The same files give the same bytes, so
// sessions in one directory share their system prompt's cached prefix.
//
// A repository is untrusted input, and the block goes into the system prompt, so a
// guidance file is read only when it is a regular file really inside the git root (wd
// itself when there is no git root): a guidance name that is a symlink, a FIFO, a socket or
// a device, and a file reached through a symlinked directory that leaves the root, are
// skipped and reported in [Guidance.Skipped]. (CLAUDE.md -> AGENTS.md, a common link, loses
// nothing: AGENTS.md itself is read.) At most 64 KiB of a file is read; a longer one is cut
// at a line or character boundary with a marker naming its size and path.
func LoadGuidance(wd string) Guidance {
	wd = filepath.Clean(wd)
	top := GitRoot(wd)
	if top == "" {
		top = wd
	}
	// The root first, then each directory down to wd: the nearer a file, the later it
	// comes, so that it can refine what the repository as a whole says.
	dirs := []string{"."}
	if rel, err := filepath.Rel(top, wd); err == nil && rel != "." {
		d := ""
		for elem := range strings.SplitSeq(rel, string(filepath.Separator)) {
			d = filepath.Join(d, elem)
			dirs = append(dirs, d)
		}
	}
	var g Guidance
	root, err := os.OpenRoot(top)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			g.Skipped = append(g.Skipped, GuidanceSkip{Path: top, Reason: fmt.Sprintf("the directory cannot be opened: %v", err)})
		}
		return g
	}
	defer root.Close()
	var b strings.Builder
	for _, d := range dirs {
		for _, name := range GuidanceFiles {
			p := filepath.Join(top, d, name)
			text, size, err := readGuidance(root, filepath.Join(d, name))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				g.Skipped = append(g.Skipped, GuidanceSkip{Path: p, Reason: err.Error()})
				continue
			}
			if strings.TrimSpace(text) == "" {
				continue
			}
			if b.Len() == 0 {
				b.WriteString("# Project Guidance\n\nInstructions from the project's own guidance files; follow them unless the user says otherwise.\n")
			}
			fmt.Fprintf(&b, "\n[project guidance %s]\n%s\n", oneLine(p), strings.TrimRight(text, "\n"))
			if size > maxGuidanceBytes {
				fmt.Fprintf(&b, "[… cut at %d of %d bytes; read the rest of %s with the editor]\n", len(text), size, oneLine(p))
			}
		}
	}
	g.Block = b.String()
	return g
}

// errNotRegular reports a name that is not a regular file inside the root.
var errNotRegular = errors.New("not a regular file")

// readGuidance reads at most maxGuidanceBytes of the guidance file name inside root and
// returns that text and the file's size. It fails for anything but a regular file: the
// name is checked without following it, opened without blocking (a FIFO swapped in
// meanwhile does not hang the prompt build), and checked again once open.
func readGuidance(root *os.Root, name string) (text string, size int64, err error) {
	info, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", 0, err
	}
	if err != nil {
		if _, plain := os.Lstat(filepath.Join(root.Name(), name)); errors.Is(plain, fs.ErrNotExist) {
			return "", 0, plain // not there even outside the root: nothing to report
		}
		return "", 0, fmt.Errorf("outside the repository or unreadable (%w)", err)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return "", 0, errors.New("a symlink: guidance files are read only as regular files inside the repository")
	}
	if !info.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%w (%s)", errNotRegular, info.Mode().Type())
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", 0, fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return "", 0, fmt.Errorf("stat: %w", err)
	}
	if !opened.Mode().IsRegular() || !os.SameFile(info, opened) {
		return "", 0, fmt.Errorf("%w: it changed while being opened", errNotRegular)
	}
	size = opened.Size()
	data, err := io.ReadAll(io.LimitReader(f, maxGuidanceBytes+1))
	if err != nil {
		return "", 0, fmt.Errorf("read: %w", err)
	}
	if int64(len(data)) > size {
		size = int64(len(data)) // it grew since the stat
	}
	if len(data) > maxGuidanceBytes {
		data = cutText(data[:maxGuidanceBytes])
		if size <= maxGuidanceBytes {
			size = maxGuidanceBytes + 1
		}
	}
	return string(data), size, nil
}

// cutText shortens data, already cut at an arbitrary byte, to its last whole line when
// one ends in its second half, else to its last whole character.
func cutText(data []byte) []byte {
	if i := bytes.LastIndexByte(data, '\n'); i >= len(data)/2 {
		return data[:i+1]
	}
	for i := 0; i < utf8.UTFMax && len(data) > 0 && !utf8.Valid(data); i++ {
		data = data[:len(data)-1]
	}
	return data
}
