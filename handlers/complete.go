package handlers

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/go-chi/chi/v5"
)

// pathChoice is a completion of a typed path: the path to type, and whether it names a
// directory (its path then ends in "/", so the next name can be typed on).
type pathChoice struct {
	Path string `json:"path"`
	Dir  bool   `json:"dir,omitempty"`
}

// maxListed bounds the entries of one directory that a completion reads.
const maxListed = 10000

// completePath completes typed, a path as a user types it (absolute, ~/ for home, else
// relative to dir): the entries of the directory it names up to its last "/" whose names
// start with what follows, in name order, at most max. Hidden names are offered only once
// a dot is typed; dirsOnly leaves files out. A directory that cannot be read has none.
func completePath(typed, dir, home string, dirsOnly bool, max int) []pathChoice {
	head, prefix := "", typed
	if i := strings.LastIndexByte(typed, '/'); i >= 0 {
		head, prefix = typed[:i+1], typed[i+1:]
	}
	parent := head
	switch {
	case strings.HasPrefix(head, "~/") && home != "":
		parent = filepath.Join(home, head[2:])
	case filepath.IsAbs(head):
	case dir == "":
		return nil
	default:
		parent = filepath.Join(dir, head)
	}
	// O_DIRECTORY|O_NONBLOCK: a typed name that is a FIFO is refused at once rather than
	// hanging the request.
	f, err := os.OpenFile(parent, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	ents, _ := f.ReadDir(maxListed)
	f.Close()
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var out []pathChoice
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || strings.HasPrefix(name, ".") && !strings.HasPrefix(prefix, ".") {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			info, err := os.Stat(filepath.Join(parent, name))
			isDir = err == nil && info.IsDir()
		}
		switch {
		case isDir:
			out = append(out, pathChoice{Path: head + name + "/", Dir: true})
		case !dirsOnly:
			out = append(out, pathChoice{Path: head + name})
		default:
			continue
		}
		if len(out) == max {
			break
		}
	}
	return out
}

// completeAttachment completes the @path being typed in a session's composer (?q=, the
// path after the @) from the session's directory: JSON, a list of {path, dir}.
func (s *server) completeAttachment(w http.ResponseWriter, r *http.Request) error {
	sess, _, err := s.Sessions.Snapshot(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	choices := completePath(r.URL.Query().Get("q"), sess.Cwd, s.Home, false, 20)
	if choices == nil {
		choices = []pathChoice{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(choices)
}
