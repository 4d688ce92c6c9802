package sessions

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"myco.dev/agent/model"
	"myco.dev/hosts/tools"
)

// ErrBadDir reports a session directory that cannot be used: a [DirError] matches it.
var ErrBadDir = errors.New("sessions: the directory cannot be used")

// DirError is a session directory refused at creation: Dir as given, and Problem, what is
// wrong with it in a few words ("is not an absolute path", "does not exist", …).
type DirError struct {
	Dir     string
	Problem string
}

func (e *DirError) Error() string { return fmt.Sprintf("sessions: directory %q %s", e.Dir, e.Problem) }

func (e *DirError) Unwrap() error { return ErrBadDir }

// CheckDir returns dir cleaned when it can be a session's directory on this machine: an
// absolute path of an existing directory that this process can list and enter. Otherwise
// it returns a [DirError] that says what is wrong.
func CheckDir(dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", &DirError{Dir: dir, Problem: "is not an absolute path; give the whole path, starting with /"}
	}
	clean := filepath.Clean(dir)
	info, err := os.Stat(clean)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", &DirError{Dir: dir, Problem: "does not exist"}
	case errors.Is(err, fs.ErrPermission):
		return "", &DirError{Dir: dir, Problem: "cannot be reached: permission denied"}
	case err != nil:
		return "", &DirError{Dir: dir, Problem: "cannot be used: " + err.Error()}
	case !info.IsDir():
		return "", &DirError{Dir: dir, Problem: "is not a directory"}
	}
	// Read to list it, search to work in it.
	if err := syscall.Access(clean, 0o5); err != nil {
		return "", &DirError{Dir: dir, Problem: "is not readable: permission denied"}
	}
	return clean, nil
}

// dirTools runs a runtime's tool calls in its session's directory: each call carries it
// ([tools.WithWorkDir]), which the local tools use and remote hosts never see.
type dirTools struct {
	Tools
	dir string
}

func (t dirTools) Call(ctx context.Context, call model.ToolCall) model.ToolResult {
	return t.Tools.Call(tools.WithWorkDir(ctx, t.dir), call)
}

// dirOf is the directory session s works in: its own, or for a session saved before
// sessions kept one, the service's.
func (m *Manager) dirOf(s *Session) string {
	if s.Cwd != "" {
		return s.Cwd
	}
	return m.o.Dir
}

// parentDir is the directory of session id, which a child inherits: its saved one, else
// the service's.
func (m *Manager) parentDir(id string) string {
	if meta, _, err := m.o.Store.readMeta(id); err == nil && meta.Cwd != "" {
		return meta.Cwd
	}
	return m.o.Dir
}
