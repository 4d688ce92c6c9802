package hosts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/internal/needs"
)

func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	writeFile(t, file, "x")
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	link := filepath.Join(base, "link")
	if err := os.Symlink(open, link); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(base, "theirs")
	if err := os.Mkdir(theirs, 0o700); err != nil {
		t.Fatal(err)
	}
	chowned := os.Chown(theirs, 65534, 65534) == nil // only root can give it away
	for _, tt := range []struct {
		name, dir, err string
	}{
		{"new", filepath.Join(base, "new", "myco-1"), ""},
		{"open to others is made private", open, ""},
		{"a file", file, "not a directory"},
		{"a symlink", link, "is not a directory"},
		{"another user's", theirs, "belongs to another user"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.dir == theirs && !chowned {
				needs.Root(t, "chowning a directory to another user")
			}
			err := PrivateDir(tt.dir)
			if tt.err == "" {
				info, serr := os.Lstat(tt.dir)
				if err != nil || serr != nil || info.Mode().Perm() != 0o700 {
					t.Errorf("PrivateDir(%s) = %v, then Lstat = %v, %v; want a private directory", tt.dir, err, info, serr)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("PrivateDir(%s) = %v, want %q", tt.dir, err, tt.err)
			}
		})
	}
}
