package snapshot

import (
	"encoding/base64"
	"path"
	"strings"
	"unicode/utf8"
)

// Path names a file in a snapshot: slash-separated and relative to the snapshot's directory
// ("src/main.go"), or absolute for a file captured outside it ([CaptureRequest.Files]). It holds
// the name's bytes exactly, whatever they are: a name may hold a newline, a control
// character or bytes that are not UTF-8.
//
// Its text (and so JSON) form is the name itself when the name is valid UTF-8, and
// otherwise a NUL followed by the standard base64 of its bytes. No file name holds a NUL,
// so the form is unambiguous, and a Path survives a trip through JSON (the host protocol)
// byte for byte, which a plain string with invalid UTF-8 would not.
type Path string

// MarshalText returns p's text form.
func (p Path) MarshalText() ([]byte, error) {
	if utf8.ValidString(string(p)) && !strings.HasPrefix(string(p), "\x00") {
		return []byte(p), nil
	}
	b := make([]byte, 1+base64.StdEncoding.EncodedLen(len(p)))
	base64.StdEncoding.Encode(b[1:], []byte(p))
	return b, nil
}

// UnmarshalText reads the text form that [Path.MarshalText] writes.
func (p *Path) UnmarshalText(b []byte) error {
	if len(b) == 0 || b[0] != 0 {
		*p = Path(b)
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(string(b[1:]))
	if err != nil {
		return err
	}
	*p = Path(raw)
	return nil
}

// isAbs reports whether p names a file outside the snapshot's directory.
func (p Path) isAbs() bool { return strings.HasPrefix(string(p), "/") }

// validRel reports whether p is a clean relative path: no empty, "." or ".." element, no
// NUL, no leading or trailing slash.
func validRel(p string) bool {
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	for elem := range strings.SplitSeq(p, "/") {
		if elem == "" || elem == "." || elem == ".." {
			return false
		}
	}
	return true
}

// isGitName reports whether a path element names a repository's .git; any case, since
// .GIT is .git on a case-insensitive file system.
func isGitName(elem string) bool { return strings.EqualFold(elem, ".git") }

// inGit reports whether a slash path has a .git element.
func inGit(p string) bool {
	for elem := range strings.SplitSeq(p, "/") {
		if isGitName(elem) {
			return true
		}
	}
	return false
}

// join joins a directory's relative path and a name in it.
func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// parent returns the relative path of p's directory, "" for the top.
func parent(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/") || (dir == "/" && path.IsAbs(p))
}

// comparePaths orders slash paths as a walk of their trees does: by element, so that
// what is in a directory comes right after it ("a", "a/b", "a.txt").
func comparePaths(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x == '/' {
			return -1
		}
		if y == '/' {
			return 1
		}
		if x < y {
			return -1
		}
		return 1
	}
	return len(a) - len(b)
}
