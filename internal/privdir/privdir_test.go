package privdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/internal/needs"
)

// base returns a directory of the test's, private, to make private directories in.
func base(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestEnsureMakesAPrivateDirectory(t *testing.T) {
	dir := filepath.Join(base(t), "new", "myco-1")
	if err := Ensure(dir); err != nil {
		t.Fatalf("Ensure(%s) = %v", dir, err)
	}
	if st, err := os.Lstat(filepath.Dir(dir)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the missing parent: %v %v, want it made 0700", st, err)
	}
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Fatalf("after Ensure: %v %v, want a 0700 directory", st, err)
	}
	if err := Ensure(dir); err != nil {
		t.Errorf("Ensure of an existing private directory = %v", err)
	}
}

// TestEnsureRefuses: each way another user could have prepared the name is refused with
// a message that names the directory and the fix, and nothing is made through it.
func TestEnsureRefuses(t *testing.T) {
	for _, tt := range []struct {
		name  string
		root  bool // needs root, to make another user's directory
		setup func(t *testing.T, dir string)
		want  []string
	}{
		{"open to others", false, func(t *testing.T, dir string) { mkdir(t, dir, 0o777) },
			[]string{"has mode 0777", "chmod 700"}},
		{"open to the group", false, func(t *testing.T, dir string) { mkdir(t, dir, 0o750) },
			[]string{"has mode 0750"}},
		{"a symbolic link", false, func(t *testing.T, dir string) {
			target := t.TempDir()
			if err := os.Symlink(target, dir); err != nil {
				t.Fatal(err)
			}
		}, []string{"is a symbolic link", "rm ", "TMPDIR"}},
		{"a file", false, func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, []string{"is not a directory"}},
		{"another user's", true, func(t *testing.T, dir string) {
			mkdir(t, dir, 0o700)
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, []string{"belongs to uid 65534", "TMPDIR"}},
		{"another user's parent", true, func(t *testing.T, dir string) {
			parent := filepath.Dir(dir)
			if err := os.Chown(parent, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, []string{"on the way to", "belongs to uid 65534"}},
		{"a parent others can write", false, func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Dir(dir), 0o777); err != nil {
				t.Fatal(err)
			}
		}, []string{"on the way to", "not sticky"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root {
				needs.Root(t, "making another user's directory")
			}
			dir := filepath.Join(base(t), "myco-1")
			tt.setup(t, dir)
			err := Ensure(dir)
			if err == nil {
				t.Fatalf("Ensure(%s) = nil, want a refusal", dir)
			}
			for _, w := range append(tt.want, dir) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Ensure = %q, want it to say %q", err, w)
				}
			}
		})
	}
}

// TestEnsureInStickyDirectory: a world-writable sticky parent, as /tmp is, is a safe way.
func TestEnsureInStickyDirectory(t *testing.T) {
	parent := base(t)
	if err := os.Chmod(parent, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := Ensure(filepath.Join(parent, "myco-1")); err != nil {
		t.Errorf("Ensure under a sticky directory = %v", err)
	}
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}
