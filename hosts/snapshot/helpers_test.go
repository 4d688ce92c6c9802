package snapshot

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"myco.dev/internal/needs"
)

func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newStore(t testing.TB) *Store { return openStore(t, t.TempDir()) }

// write writes files under dir: path -> content; a path ending in "/" is a directory.
func write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func capture(t testing.TB, s *Store, dir string) ID {
	t.Helper()
	snap, err := s.Capture(t.Context(), CaptureRequest{Owner: "test", Dir: dir})
	if err != nil {
		t.Fatalf("Capture(%s): %v", dir, err)
	}
	return snap.ID
}

// listing returns the paths a snapshot's tree holds, directories with a trailing "/".
func listing(t testing.TB, s *Store, id ID) []string {
	t.Helper()
	r, err := s.record(id)
	if err != nil {
		t.Fatal(err)
	}
	var chs []change
	if err := s.diffTrees(t.Context(), emptyTree, r.tree, "", false, false, &chs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range chs {
		p := c.path
		if c.after.isDir() {
			p += "/"
		}
		out = append(out, p)
	}
	return out
}

// tree returns the files under dir as path -> content ("-> target" for a symlink, a
// trailing "/" key for a directory, "mode" appended as " [0755]" when executable).
func tree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "-> " + target
		case info.IsDir():
			out[rel+"/"] = ""
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := string(b)
			if info.Mode().Perm()&0o111 != 0 {
				s += " [exec]"
			}
			out[rel] = s
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// git runs git in dir with no user or system configuration.
func git(t testing.TB, dir string, stdin []byte, args ...string) []byte {
	t.Helper()
	needs.Program(t, "git", "apt-get install git")
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && slices.Contains(args, "check-ignore") {
			return out // nothing ignored
		}
		t.Fatalf("git %v: %v: %s", args, err, stderr.String())
	}
	return out
}

func splitNUL(b []byte) []string {
	var out []string
	for f := range strings.SplitSeq(string(b), "\x00") {
		if f != "" {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}
