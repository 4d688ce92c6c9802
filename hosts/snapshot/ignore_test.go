package snapshot

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitCorpus is a project whose .gitignore files use the rules' features; TestIgnoreMatchesGit
// checks what a capture keeps of it against git's own answer.
var gitCorpus = map[string]string{
	".gitignore": "# a comment\n*.log\n!important.log\nbuild/\n!build/keep.txt\n/foo\nnode_modules\n" +
		"docs/**/secret.md\ndeep/**/c/*.txt\nabc/**/def\n\\#hash\n\\!bang\nsp\\ \ntrail.txt   \n" +
		"[q]?\n*.o\n**/gen/*.pb.go\nFoo/\n[[:digit:]]*.dat\n[!a-c]x.bin\nvendor/**\n!vendor/keep/\n" +
		"out/*\n!out/dist/\nlib/*/\n",
	"src/.gitignore":          "!gen/keep.pb.go\n*.tmp\n/local.txt\nsub/\r\ncrlf.txt\r\n",
	"src/sub/deeper/x.go":     "x",
	"src/local.txt":           "x",
	"src/a/local.txt":         "x",
	"src/x.tmp":               "x",
	"src/crlf.txt":            "x",
	"src/gen/keep.pb.go":      "x",
	"src/gen/other.pb.go":     "x",
	"src/gen/y.go":            "x",
	"src/main.go":             "x",
	"a.log":                   "x",
	"logs/today.log":          "x",
	"logs/important.log":      "x",
	"b.txt":                   "x",
	"build/out.o":             "x",
	"build/keep.txt":          "x",
	"foo":                     "x",
	"bar/foo":                 "x",
	"bar/foo2/baz":            "x",
	"node_modules/x/i.js":     "x",
	"sub/node_modules/y.js":   "x",
	"docs/api.md":             "x",
	"docs/secret.md":          "x",
	"docs/internal/secret.md": "x",
	"deep/a/b/c/d.txt":        "x",
	"deep/c/d.txt":            "x",
	"deep/c/d.md":             "x",
	"abc/def":                 "x",
	"abc/xyz/def":             "x",
	"#hash":                   "x",
	"!bang":                   "x",
	"sp ":                     "x",
	"sp":                      "x",
	"trail.txt":               "x",
	"q1":                      "x",
	"q12":                     "x",
	"Foo/x":                   "x",
	"Foo2/Foo":                "x",
	"2021.dat":                "x",
	"a2021.dat":               "x",
	"zx.bin":                  "x",
	"ax.bin":                  "x",
	"vendor/a.go":             "x",
	"vendor/keep/b.go":        "x",
	"out/a":                   "x",
	"out/dist/b":              "x",
	"lib/a/b":                 "x",
	"lib/c":                   "x",
	"é/ü.txt":                 "x",
	"empty/":                  "",
}

func TestIgnoreMatchesGit(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, gitCorpus)
	compareWithGit(t, dir)
}

// TestIgnoreMatchesGitRandom checks random patterns on random paths against git.
func TestIgnoreMatchesGitRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 1))
	parts := []string{"a", "b", "ab", "*", "?", "**", "[ab]", "[!a]", "a*", "*b"}
	for round := range 4 {
		dir := t.TempDir()
		files := map[string]string{}
		for range 60 {
			n := 1 + r.IntN(4)
			var elems []string
			for range n {
				elems = append(elems, []string{"a", "b", "ab", "ba", "aa", "c"}[r.IntN(6)])
			}
			files[strings.Join(elems, "/")+".f"] = "x"
		}
		var pats []string
		for range 12 {
			n := 1 + r.IntN(3)
			var elems []string
			for range n {
				elems = append(elems, parts[r.IntN(len(parts))])
			}
			p := strings.Join(elems, "/")
			if r.IntN(3) == 0 {
				p += ".f"
			}
			if r.IntN(4) == 0 {
				p = "/" + p
			}
			if r.IntN(4) == 0 {
				p += "/"
			}
			if r.IntN(5) == 0 {
				p = "!" + p
			}
			pats = append(pats, p)
		}
		files[".gitignore"] = strings.Join(pats, "\n") + "\n"
		write(t, dir, files)
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			t.Logf(".gitignore:\n%s", files[".gitignore"])
			compareWithGit(t, dir)
		})
	}
}

// compareWithGit checks a capture of dir against git ls-files (the files kept) and every
// path's ignore status against git check-ignore.
func compareWithGit(t *testing.T, dir string) {
	t.Helper()
	git(t, dir, nil, "init", "-q")
	want := splitNUL(git(t, dir, nil, "ls-files", "-z", "--others", "--exclude-standard"))
	s := newStore(t)
	id := capture(t, s, dir)
	var got []string
	for _, p := range listing(t, s, id) {
		if !strings.HasSuffix(p, "/") {
			got = append(got, p)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("captured files:\n%q\ngit ls-files --others --exclude-standard:\n%q", got, want)
	}

	// Every path, through the snapshot's matcher, against git check-ignore.
	var paths []string
	isDir := map[string]bool{}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if info.Name() == ".git" {
			return filepath.SkipDir
		}
		paths = append(paths, filepath.ToSlash(rel))
		isDir[filepath.ToSlash(rel)] = info.IsDir()
		return nil
	})
	ignored := map[string]bool{}
	for _, p := range splitNUL(git(t, dir, []byte(strings.Join(paths, "\x00")+"\x00"), "check-ignore", "-z", "--stdin", "--no-index")) {
		ignored[p] = true
	}
	r, err := s.record(id)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.matcher(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if got := m.ignoredPath(p, isDir[p]); got != ignored[p] {
			t.Errorf("ignoredPath(%q) = %v, git check-ignore says %v", p, got, ignored[p])
		}
	}
}

func TestIgnoreAboveTheDirectory(t *testing.T) {
	repo := t.TempDir()
	write(t, repo, map[string]string{
		".git/HEAD":            "ref: refs/heads/main\n",
		".gitignore":           "*.log\nproj/dist/\n",
		"proj/.gitignore":      "!keep.log\n",
		"proj/a.log":           "x",
		"proj/keep.log":        "x",
		"proj/dist/bundle.js":  "x",
		"proj/src/x.go":        "x",
		"proj/src/.git/config": "x", // a nested repository's .git: never captured
		"proj/src/.GIT/config": "x",
	})
	s := newStore(t)
	got := listing(t, s, capture(t, s, filepath.Join(repo, "proj")))
	want := []string{".gitignore", "keep.log", "src/", "src/x.go"}
	if !slices.Equal(got, want) {
		t.Errorf("capture of proj/ = %q, want %q", got, want)
	}
}
