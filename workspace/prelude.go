package workspace

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Errors callers branch on with errors.Is.
var (
	// ErrNoEntry reports a replace or remove of an entry that is not in the prelude.
	ErrNoEntry = errors.New("workspace: no such prelude entry")
	// ErrTooLarge reports an edit that would take the rendered prelude over its cap.
	ErrTooLarge = errors.New("workspace: the prelude would exceed max_prelude_bytes")
)

// Entry is one visible prelude entry: a write-once Markdown file.
type Entry struct {
	Name    string // file name, e.g. 20261203-081500.123-4f2a9c-build-notes.md
	Content string
	Size    int64
	ModTime time.Time
	Sum     [sha256.Size]byte
	// Unread reports a file larger than the scan's bound (max_prelude_bytes): it was not
	// read, Content is empty, and Sum covers only its size and modification time.
	Unread bool
}

// Visible reports whether a file name in the prelude directory can be an entry: a
// Markdown file whose name is not hidden (temporary files of an add are hidden).
func Visible(name string) bool {
	return !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "~") && strings.HasSuffix(name, ".md") && name != ".md"
}

// entryLabel is what precedes each entry in the rendered prelude. The tool never makes a
// name with control characters, but any process can drop a file into prelude/: such a
// name is quoted, so the label stays one line.
func entryLabel(name string) string { return "[prelude entry " + oneLine(name) + "]" }

// RenderEntries renders entries, in the order given, as the body of the # Prelude section:
// each under its [prelude entry NAME] label, separated by blank lines. Its length is what
// max_prelude_bytes bounds. An [Entry.Unread] entry is rendered as a one-line notice that
// says its size and how to get rid of it.
func RenderEntries(entries []Entry) string {
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(entryLabel(e.Name))
		b.WriteString("\n")
		if e.Unread {
			fmt.Fprintf(&b, "[myco: this entry was not read: its file is %d bytes, more than the whole prelude may hold; remove it (prelude tool, action remove) or prune it by hand]", e.Size)
		} else {
			b.WriteString(strings.TrimRight(e.Content, "\n"))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// RenderedSize is what max_prelude_bytes is checked against: len(RenderEntries(entries))
// without building the string, except that an [Entry.Unread] entry counts at its file's
// size, the room it would take if it were read.
func RenderedSize(entries []Entry) int {
	n := 0
	for i, e := range entries {
		if i > 0 {
			n++
		}
		if e.Unread {
			n += len(entryLabel(e.Name)) + 1 + int(e.Size) + 1
			continue
		}
		n += entrySize(e.Name, e.Content)
	}
	return n
}

func entrySize(name, content string) int {
	return len(entryLabel(name)) + 1 + len(strings.TrimRight(content, "\n")) + 1
}

// Prelude is the prelude directory of one profile. Its methods are safe for concurrent use,
// also by several processes at once: entries are never edited in place, adds cannot collide
// and no locks are taken, so a weakly consistent network filesystem is fine.
type Prelude struct {
	Dir string
	// Max is max_prelude_bytes, the cap on the rendered entries; 0 means no cap.
	Max int
	// Now is the clock for entry names; nil means time.Now.
	Now func() time.Time
}

// Load reads every visible entry in filename order. Hidden, temporary, non-Markdown,
// non-regular and empty files are skipped. A missing directory is an empty prelude. Each
// file's size is checked before it is read: one larger than p.Max is not read but
// returned with [Entry.Unread] set.
func (p *Prelude) Load() ([]Entry, error) {
	s := Scanner{Limit: p.limit()}
	snap, err := s.Scan(p.Dir)
	if err != nil {
		return nil, err
	}
	return snap.Entries, nil
}

// Watcher returns a [Watcher] of the prelude that reads no entry larger than p.Max.
func (p *Prelude) Watcher() *Watcher {
	w := NewWatcher(p.Dir)
	w.scanner.Limit = p.limit()
	return w
}

// limit is the most read of one entry: an entry over p.Max alone takes the prelude over it.
func (p *Prelude) limit() int64 {
	if p.Max > 0 {
		return int64(p.Max)
	}
	return DefaultEntryLimit
}

// Check returns an error when the prelude as it is on disk renders larger than p.Max, or
// holds an entry too large to read, naming the sizes and the two fixes. Startup calls it
// and exits on error.
func (p *Prelude) Check() error {
	entries, err := p.Load()
	if err != nil {
		return err
	}
	big := ""
	for _, e := range entries {
		if e.Unread {
			big = fmt.Sprintf(" (its entry %s alone is %d bytes and was not read)", oneLine(e.Name), e.Size)
			break
		}
	}
	if n := RenderedSize(entries); big != "" || p.Max > 0 && n > p.Max {
		bound := fmt.Sprintf("max_prelude_bytes = %d", p.Max)
		if p.Max <= 0 {
			bound = fmt.Sprintf("the %d-byte bound on one entry", DefaultEntryLimit)
		}
		return fmt.Errorf("the prelude in %s renders to %d bytes%s, over %s: prune entries by hand (delete or merge files there) or raise max_prelude_bytes in config.toml", p.Dir, n, big, bound)
	}
	return nil
}

// slugPattern is what an entry name may carry after its timestamp and unique part.
var slugPattern = regexp.MustCompile(`[^a-z0-9]+`)

// slugify turns a free-form label into a short file-name part: lowercase letters, digits
// and single hyphens, at most 40 bytes.
func slugify(s string) string {
	s = strings.Trim(slugPattern.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	return s
}

// newName returns a fresh entry name: UTC time to the millisecond, 24 random bits, and the
// slug if any. Names sort by creation time, so filename order is the order entries were
// added in.
func (p *Prelude) newName(slug string) string {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	name := now().UTC().Format("20060102-150405.000") + "-" + hex.EncodeToString(rnd[:])
	if s := slugify(slug); s != "" {
		name += "-" + s
	}
	return name + ".md"
}

// Add writes content as a new entry and returns its name. It refuses empty content and an
// entry that would take the rendered prelude over p.Max ([ErrTooLarge]). The entry appears
// whole or not at all: it is written to a hidden temporary file, synced, and linked to its
// final name, which fails rather than overwrite.
func (p *Prelude) Add(content, slug string) (string, error) {
	return p.add(content, slug, "")
}

// Replace adds content as a new entry and then drops old: the replacement is on disk
// before the old entry goes, so a crash in between leaves two candidates, never none. When
// old is not there (another agent removed or replaced it first), the new entry stays and
// the error is a [*GoneError]: two agents replacing the same entry leave both replacements,
// whatever the timing, and neither agent's note is lost.
func (p *Prelude) Replace(old, content, slug string) (name string, err error) {
	if !Visible(old) || filepath.Base(old) != old {
		return "", fmt.Errorf("replace %q: %w", old, ErrNoEntry)
	}
	name, err = p.add(content, slug, old)
	if err != nil {
		return "", err
	}
	if err := os.Remove(filepath.Join(p.Dir, old)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return name, &GoneError{Old: old, New: name}
		}
		return name, fmt.Errorf("replace %s: the replacement %s was added, but the old entry could not be removed: %w", old, name, err)
	}
	syncDir(p.Dir)
	return name, nil
}

// GoneError reports a replace whose old entry another agent removed first. The replacement
// New is in place; the prelude may now hold two candidates for the same note.
type GoneError struct{ Old, New string }

func (e *GoneError) Error() string {
	return fmt.Sprintf("entry %s was not there (another agent may have replaced or removed it first); your content was added as %s, so check for duplicate candidates to merge", e.Old, e.New)
}

func (e *GoneError) Unwrap() error { return ErrNoEntry }

// Remove drops the entry name.
func (p *Prelude) Remove(name string) error {
	if !Visible(name) || filepath.Base(name) != name {
		return fmt.Errorf("remove %q: %w", name, ErrNoEntry)
	}
	if err := os.Remove(filepath.Join(p.Dir, name)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %q: %w", name, ErrNoEntry)
		}
		return fmt.Errorf("remove prelude entry %s: %w", name, err)
	}
	syncDir(p.Dir)
	return nil
}

func (p *Prelude) add(content, slug, replacing string) (string, error) {
	if strings.TrimSpace(content) == "" {
		return "", errors.New("an entry needs content: empty entries are ignored")
	}
	if p.Max > 0 {
		entries, err := p.Load()
		if err != nil {
			return "", err
		}
		entries = slices.DeleteFunc(entries, func(e Entry) bool { return e.Name == replacing })
		name := p.newName(slug)
		after := RenderedSize(entries) + entrySize(name, content)
		if len(entries) > 0 {
			after++
		}
		if after > p.Max {
			return "", fmt.Errorf("%w: the prelude would render to %d bytes, over the cap of %d (now %d): shorten the entry, merge or remove entries first, or ask the user to raise max_prelude_bytes", ErrTooLarge, after, p.Max, RenderedSize(entries))
		}
	}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return "", fmt.Errorf("create the prelude directory: %w", err)
	}
	tmp, err := os.CreateTemp(p.Dir, ".add-*.tmp")
	if err != nil {
		return "", fmt.Errorf("write a prelude entry: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write a prelude entry: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write a prelude entry: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write a prelude entry: %w", err)
	}
	for range 5 {
		name := p.newName(slug)
		err := os.Link(tmp.Name(), filepath.Join(p.Dir, name))
		if err == nil {
			syncDir(p.Dir)
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("write prelude entry %s: %w", name, err)
		}
	}
	return "", errors.New("write a prelude entry: no free name after 5 tries")
}

// syncDir makes a directory's entries durable; errors are ignored, since some filesystems
// cannot sync a directory and the entry itself is already synced.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
