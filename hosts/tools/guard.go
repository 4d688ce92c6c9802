package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Guard keeps str_replace_based_edit_tool and view_image out of myco's own files: its
// home (sessions, configuration) except the profile's workspace. A path is refused when,
// with its symlinks resolved, it is a Deny entry or lies under one, unless it is or lies
// under an Allow entry (viewing and changing) or, for viewing only, a ReadOnly entry. The
// entries are absolute paths, resolved at each call. A nil *Guard allows everything (a
// remote host, which has no myco home to protect).
//
// The guard is for these two tools only: bash can read and change whatever the host
// process's user can, and a process racing the tool (changing a directory into a symlink
// between the check and the use) is not stopped. It keeps the model's file tools, and what
// they show it, away from myco's records; it is not a sandbox.
type Guard struct {
	Deny     []string
	Allow    []string
	ReadOnly []string
}

// guardPaths is a [Guard] with its entries resolved, for one call.
type guardPaths struct {
	deny, allow, readOnly []string
}

// resolved returns g's entries with their symlinks resolved. A nil g gives nil.
func (g *Guard) resolved() *guardPaths {
	if g == nil {
		return nil
	}
	res := func(paths []string) []string {
		out := make([]string, 0, len(paths))
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				continue // the constructor's mistake; relative entries mean nothing here
			}
			if r, err := realPath(filepath.Clean(p)); err == nil {
				p = r
			}
			out = append(out, filepath.Clean(p))
		}
		return out
	}
	return &guardPaths{deny: res(g.Deny), allow: res(g.Allow), readOnly: res(g.ReadOnly)}
}

// check returns an error if the tool may not use real, the resolved form of path, for
// reading (write false) or changing it. tool names the tool in the message.
func (gp *guardPaths) check(tool, path, real string, write bool) error {
	if gp == nil {
		return nil
	}
	var deny string
	for _, d := range gp.deny {
		if within(real, d) {
			deny = d
			break
		}
	}
	if deny == "" || withinAny(real, gp.allow) || !write && withinAny(real, gp.readOnly) {
		return nil
	}
	via := ""
	if real != path {
		via = " (" + path + " resolves to " + real + ")"
	}
	inside := func(dirs []string) string {
		var in []string
		for _, d := range dirs {
			if within(d, deny) {
				in = append(in, d)
			}
		}
		return strings.Join(in, ", ")
	}
	ws, ro := inside(gp.allow), inside(gp.readOnly)
	if write && withinAny(real, gp.readOnly) {
		msg := fmt.Sprintf("%s may view %s%s but not change it: it is inside %s, which holds myco's own files", tool, real, via, deny)
		if ws != "" {
			msg += "; only the workspace " + ws + " may be changed there"
		}
		return errors.New(msg)
	}
	msg := fmt.Sprintf("%s refuses %s%s: it is inside %s, which holds myco's own files (sessions, configuration), not the agent's to view or change", tool, real, via, deny)
	if ws != "" {
		msg += "; the workspace " + ws + " is allowed"
	}
	if ro != "" {
		msg += "; " + ro + " may be viewed"
	}
	return errors.New(msg)
}

// describe is the sentence a tool's description adds about the guard, or "".
func (g *Guard) describe() string {
	if g == nil || len(g.Deny) == 0 {
		return ""
	}
	s := " Paths in myco's own files (" + strings.Join(g.Deny, ", ") + ": sessions, configuration) are refused, symlinks resolved"
	if len(g.Allow) > 0 {
		s += ", except " + strings.Join(g.Allow, ", ")
	}
	if len(g.ReadOnly) > 0 {
		s += "; " + strings.Join(g.ReadOnly, ", ") + " may be viewed"
	}
	return s + "."
}

// within reports whether path is dir or lies under it. Both are clean and absolute.
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

func withinAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if within(path, d) {
			return true
		}
	}
	return false
}

// maxLinks bounds the symlinks realPath follows, as the kernel does (ELOOP).
const maxLinks = 40

// realPath resolves the symlinks of path, which is clean and absolute, component by
// component as the kernel would, including a dangling link's target. The part from the
// first missing (or unreadable) component on is kept as written: that is where a create
// would put it. So a new file under a symlinked directory, or a link to a file yet to be
// created, resolves to where it would really be written.
func realPath(path string) (string, error) {
	resolved := "/"
	rest := strings.Split(strings.TrimPrefix(path, "/"), "/")
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		info, err := os.Lstat(next)
		if err != nil {
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", path)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return resolved, nil
}
