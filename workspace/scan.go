package workspace

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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

// DefaultEntryLimit is the most a [Scanner] with no Limit reads of one entry: 16 MiB,
// far more than any model's context holds.
const DefaultEntryLimit = 16 << 20

// Scanner reads a prelude directory, reading again only the files whose size or
// modification time changed since its last scan (entries are write-once, so an unchanged
// stat means unchanged content). The zero value is ready to use; a Scanner is not safe for
// concurrent use.
type Scanner struct {
	// Limit bounds the bytes read of one entry: a file larger than Limit is not read at all
	// but listed as an [Entry] with Unread set. 0 means [DefaultEntryLimit].
	Limit int64

	cache map[string]cached
	// Reads counts the files read so far, for tests and benchmarks.
	Reads int
}

type cached struct {
	size  int64
	mtime time.Time
	entry Entry // Name empty: the file is empty and so not an entry
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
			c, err = readEntry(dir, name, s.limit())
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotRegular) {
				continue // removed or replaced since the listing
			}
			if err != nil {
				return Snapshot{}, fmt.Errorf("scan the prelude: read %s: %w", oneLine(name), err)
			}
			reads++
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

func (s *Scanner) limit() int64 {
	if s.Limit > 0 {
		return s.Limit
	}
	return DefaultEntryLimit
}

// readEntry reads the entry name of dir, size first: a file over limit is not read, and
// no more than limit+1 bytes are read of one that grew since its stat. It opens without
// following a symlink and without blocking (a FIFO swapped in since the listing does not
// hang the scan), and reports errNotRegular for anything but a regular file.
func readEntry(dir, name string, limit int64) (cached, error) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENXIO) {
		return cached{}, errNotRegular // a symlink, or a socket
	}
	if err != nil {
		return cached{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return cached{}, err
	}
	if !info.Mode().IsRegular() {
		return cached{}, errNotRegular
	}
	c := cached{size: info.Size(), mtime: info.ModTime()}
	e := Entry{Name: name, Size: info.Size(), ModTime: info.ModTime()}
	var data []byte
	if info.Size() <= limit {
		if data, err = io.ReadAll(io.LimitReader(f, limit+1)); err != nil {
			return cached{}, err
		}
	}
	if info.Size() > limit || int64(len(data)) > limit {
		e.Unread = true
		e.Size = max(e.Size, int64(len(data)))
		e.Sum = sha256.Sum256(fmt.Appendf(nil, "unread %d %d", e.Size, e.ModTime.UnixNano()))
		c.entry = e
		return c, nil
	}
	if strings.TrimSpace(string(data)) != "" {
		e.Content, e.Sum = string(data), sha256.Sum256(data)
		c.entry = e
	}
	return c, nil
}
