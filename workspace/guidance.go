package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// GuidanceFiles are the project guidance file names read from the working directory and
// its git root, in this order.
var GuidanceFiles = []string{"AGENTS.md", "CLAUDE.md"}

// maxGuidanceBytes bounds one guidance file in the prompt; a longer one is cut with a
// marker that says where the rest is.
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

// GuidanceBlock renders the project guidance for the working directory wd: AGENTS.md and
// CLAUDE.md of the git root (when it differs from wd), then of wd, each under a
// [project guidance PATH] label. It returns "" when there are none. Unreadable files are
// skipped, as are names that are not regular files.
func GuidanceBlock(wd string) string {
	dirs := []string{}
	if root := GitRoot(wd); root != "" && root != filepath.Clean(wd) {
		dirs = append(dirs, root)
	}
	dirs = append(dirs, filepath.Clean(wd))
	var b strings.Builder
	for _, d := range dirs {
		for _, name := range GuidanceFiles {
			p := filepath.Join(d, name)
			text, cut, err := readGuidance(p)
			if err != nil || strings.TrimSpace(text) == "" {
				continue
			}
			if b.Len() == 0 {
				b.WriteString("# Project Guidance\n\nInstructions from the project's own guidance files; follow them unless the user says otherwise.\n")
			}
			fmt.Fprintf(&b, "\n[project guidance %s]\n%s\n", p, strings.TrimRight(text, "\n"))
			if cut {
				fmt.Fprintf(&b, "[… cut at %d bytes; read the rest of %s with the editor]\n", maxGuidanceBytes, p)
			}
		}
	}
	return b.String()
}

func readGuidance(p string) (text string, cut bool, err error) {
	info, err := os.Stat(p)
	if err != nil {
		return "", false, err
	}
	if !info.Mode().IsRegular() {
		return "", false, errors.New("not a regular file")
	}
	f, err := os.Open(p)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxGuidanceBytes+1))
	if err != nil && !errors.Is(err, fs.ErrClosed) {
		return "", false, err
	}
	if len(data) > maxGuidanceBytes {
		return string(data[:maxGuidanceBytes]), true, nil
	}
	return string(data), false, nil
}
