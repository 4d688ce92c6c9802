package lineedit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

	"myco.dev/internal/atomicfile"
)

// MaxEntry is the size in bytes of the longest entry a [History] saves to its file; a
// longer message (a large paste) is recalled in the run that typed it only.
const MaxEntry = 16 << 10

// History is the messages entered at a prompt, kept in a file (mode 0600, one JSON string
// a line, appended to as they are entered) so that ↑ recalls them in later runs too. It
// keeps the newest Max entries; the file is cut back to them when it has twice as many
// lines. A message that starts with a space is not kept, nor one equal to the one before.
// Several processes may append to the same file; when two rewrite it at once, one's latest
// entries may be lost. Safe for concurrent use.
type History struct {
	path string
	max  int

	mu      sync.Mutex // guards the fields below
	entries []string   // oldest first
	lines   int        // lines in the file
}

// OpenHistory reads the history kept in path, which need not exist yet, keeping at most
// max entries. A file that group or others may read is made private.
func OpenHistory(path string, max int) (*History, error) {
	if max < 1 {
		return nil, fmt.Errorf("history %s: the size %d is not positive", path, max)
	}
	h := &History{path: path, max: max}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the history: %w", err)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return nil, fmt.Errorf("make the history private: %w", err)
		}
	}
	for line := range bytes.Lines(b) {
		h.lines++
		var e string
		if json.Unmarshal(line, &e) == nil && e != "" {
			h.entries = append(h.entries, e)
		}
	}
	if len(h.entries) > max {
		h.entries = h.entries[len(h.entries)-max:]
	}
	return h, nil
}

// Len returns the number of entries.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.entries)
}

// At returns entry i, 0 being the newest, as the line editor shows it: its line breaks as
// [Newline], its tabs as [Tab]. It panics when i is out of range.
func (h *History) At(i int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return asShown.Replace(h.entries[len(h.entries)-1-i])
}

// Append adds entry as the newest and saves it; see [History] for the entries it does not
// keep. On a write error the entry is still recalled in this run.
func (h *History) Append(entry string) error {
	if strings.TrimSpace(entry) == "" || strings.HasPrefix(entry, " ") {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.entries); n > 0 && h.entries[n-1] == entry {
		return nil
	}
	h.entries = append(h.entries, entry)
	if len(h.entries) > h.max {
		h.entries = h.entries[len(h.entries)-h.max:]
	}
	if len(entry) > MaxEntry {
		return nil
	}
	if h.lines+1 > 2*h.max {
		return h.rewrite()
	}
	line, _ := json.Marshal(entry)
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("save the history: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("save the history: %w", err)
	}
	h.lines++
	return nil
}

// rewrite replaces the file with the entries kept. Call it with mu held.
func (h *History) rewrite() error {
	var b bytes.Buffer
	n := 0
	for _, e := range h.entries {
		if len(e) > MaxEntry {
			continue
		}
		line, _ := json.Marshal(e)
		b.Write(line)
		b.WriteByte('\n')
		n++
	}
	if err := atomicfile.Write(h.path, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("save the history: %w", err)
	}
	h.lines = n
	return nil
}
