package workspace

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Snapshot is the visible state of a prelude directory at one scan.
type Snapshot struct {
	Entries []Entry // in filename order
}

// Rendered returns the entries rendered as the # Prelude section's body.
func (s Snapshot) Rendered() string { return RenderEntries(s.Entries) }

// Changes lists the entries that differ between two snapshots, by name.
type Changes struct {
	Added, Modified, Removed []string
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool { return len(c.Added)+len(c.Modified)+len(c.Removed) == 0 }

// Diff returns what changed from s to next.
func (s Snapshot) Diff(next Snapshot) Changes {
	var c Changes
	old := make(map[string][sha256.Size]byte, len(s.Entries))
	for _, e := range s.Entries {
		old[e.Name] = e.Sum
	}
	for _, e := range next.Entries {
		sum, ok := old[e.Name]
		switch {
		case !ok:
			c.Added = append(c.Added, e.Name)
		case sum != e.Sum:
			c.Modified = append(c.Modified, e.Name)
		}
		delete(old, e.Name)
	}
	for _, e := range s.Entries {
		if _, gone := old[e.Name]; gone {
			c.Removed = append(c.Removed, e.Name)
		}
	}
	return c
}

// Scanner reads a prelude directory, reading again only the files whose size or
// modification time changed since its last scan (entries are write-once, so an unchanged
// stat means unchanged content). The zero value is ready to use; a Scanner is not safe for
// concurrent use.
type Scanner struct {
	cache map[string]cached
	// Reads counts the files read so far, for tests and benchmarks.
	Reads int
}

type cached struct {
	size  int64
	mtime time.Time
	entry Entry // Content empty: the file is empty and so not an entry
}

// Scan returns the directory's visible entries in filename order. A missing directory is an
// empty prelude. On error the scanner's cache is unchanged.
func (s *Scanner) Scan(dir string) (Snapshot, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		s.cache = nil
		return Snapshot{}, nil
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("scan the prelude: %w", err)
	}
	next := make(map[string]cached, len(des))
	var snap Snapshot
	reads := 0
	for _, de := range des {
		name := de.Name()
		if !Visible(name) || !de.Type().IsRegular() {
			continue
		}
		info, err := de.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			return Snapshot{}, fmt.Errorf("scan the prelude: %w", err)
		}
		c, ok := s.cache[name]
		if !ok || c.size != info.Size() || !c.mtime.Equal(info.ModTime()) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return Snapshot{}, fmt.Errorf("scan the prelude: read %s: %w", name, err)
			}
			reads++
			c = cached{size: info.Size(), mtime: info.ModTime()}
			if strings.TrimSpace(string(data)) != "" {
				c.entry = Entry{Name: name, Content: string(data), Size: info.Size(), ModTime: info.ModTime(), Sum: sha256.Sum256(data)}
			}
		}
		next[name] = c
		if c.entry.Name != "" {
			snap.Entries = append(snap.Entries, c.entry)
		}
	}
	slices.SortFunc(snap.Entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	s.cache = next
	s.Reads += reads
	return snap, nil
}
