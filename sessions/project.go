package sessions

import (
	"os"
	"path/filepath"
)

// Project returns the project of directory dir: the root of the git work tree it is in
// (the nearest directory above it, itself included, that has a .git, a directory or a
// worktree's file), else dir itself. Answers are remembered for the manager's life: a
// listing asks once per directory, not once per session.
func (m *Manager) Project(dir string) string {
	if dir == "" {
		return ""
	}
	if p, ok := m.projects.Load(dir); ok {
		return p.(string)
	}
	p := dir
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			p = d
			break
		}
		up := filepath.Dir(d)
		if up == d {
			break
		}
		d = up
	}
	m.projects.Store(dir, p)
	return p
}
