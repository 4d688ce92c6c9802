package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// WorkDirs says which directory an owner's relative paths mean on this host: view_image
// resolves a relative path against it, and the editor, which takes absolute paths only,
// names the path a relative one probably meant. [*Bash] satisfies it. Implementations are
// safe for concurrent use.
type WorkDirs interface {
	// WorkDir returns owner's working directory on this host and what it is, for
	// messages ("the current directory of bash session b2"); ok is false when owner has
	// none here.
	WorkDir(owner string) (dir, from string, ok bool)
}

// WorkDir returns the current directory of owner's most recently used bash session that
// still runs (started, written to or read; the session's own process, read from
// /proc/PID/cwd, so a `cd` typed into an interactive shell counts). ok is false when owner
// has no running session, or the directory cannot be read (a host without /proc).
func (b *Bash) WorkDir(owner string) (dir, from string, ok bool) {
	ss := b.ownerSessions(owner)
	var best *session
	var bestUsed int64
	for _, s := range ss {
		s.mu.Lock()
		used, exited := s.used, s.exited
		s.mu.Unlock()
		if !exited && (best == nil || used > bestUsed) {
			best, bestUsed = s, used
		}
	}
	if best == nil {
		return "", "", false
	}
	dir, err := os.Readlink("/proc/" + strconv.Itoa(best.pid) + "/cwd")
	if err != nil || !filepath.IsAbs(dir) {
		return "", "", false
	}
	if strings.HasSuffix(dir, " (deleted)") {
		if _, err := os.Stat(dir); err != nil {
			return "", "", false // the kernel's mark of a removed directory
		}
	}
	return dir, "the current directory of bash session " + best.id, true
}

// pathArg is a path a file tool was given, made absolute.
type pathArg struct {
	abs string // clean and absolute
	// shown names the path in messages: the path as given when it was absolute, else the
	// absolute path and how the relative one was resolved.
	shown string
}

// resolve makes path, which is not empty, absolute for owner: a relative path is joined
// to owner's working directory from dirs (nil means none), else the directory of the
// call's session ([WithWorkDir]), else the host process's.
func resolve(ctx context.Context, dirs WorkDirs, owner, path string) (pathArg, error) {
	if filepath.IsAbs(path) {
		return pathArg{abs: filepath.Clean(path), shown: path}, nil
	}
	dir, from, ok := "", "", false
	if dirs != nil {
		dir, from, ok = dirs.WorkDir(owner)
	}
	if !ok {
		dir, ok = WorkDirFrom(ctx)
		from = "the session's directory (you have no running bash session on this host)"
	}
	if !ok {
		wd, err := os.Getwd()
		if err != nil {
			return pathArg{}, fmt.Errorf("path %q is relative, and the host's working directory to resolve it against is unknown (%v); give an absolute path", path, err)
		}
		dir, from = wd, "the host process's working directory (you have no running bash session on this host)"
	}
	abs := filepath.Join(dir, path)
	return pathArg{abs: abs, shown: fmt.Sprintf("%s (%q resolved against %s, %s)", abs, path, from, dir)}, nil
}
