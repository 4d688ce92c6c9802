package snapshot

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options configures a [Store].
type Options struct {
	// Dir is the store's directory, created (0700) if missing: a private directory of the
	// host (the profile's, or the host daemon's), never inside a project.
	Dir string
	// MaxFileSize is the size above which a file is recorded as changed but not stored;
	// 0 means 2 MiB.
	MaxFileSize int64
	// Log gets the warnings (a damaged pack left aside); nil means slog.Default().
	Log *slog.Logger
}

// DefaultMaxFileSize is [Options.MaxFileSize]'s default.
const DefaultMaxFileSize = 2 << 20

// ErrNotFound reports a snapshot the store does not hold: an id that was never captured
// here, or one pruned.
var ErrNotFound = errors.New("snapshot: not found")

// ErrBusy reports a prune refused because another process has the store open.
var ErrBusy = errors.New("snapshot: store in use by another process")

// Store is a content-addressed store of snapshots of directories, on the host that holds
// them. Safe for concurrent use. Several processes may open the same directory (a server
// and a myco -p of the same profile): they share it, and only a prune needs it alone.
// Caller must Close.
type Store struct {
	o    Options
	log  *slog.Logger
	dir  string
	lock *os.File      // holds a shared flock while the store is open; Prune upgrades it
	racy time.Duration // racyWindow; shorter in tests

	// gc is held shared by every operation that reads or adds objects, and exclusively by
	// Prune, which deletes them.
	gc sync.RWMutex

	watch watchSet // the watches of the directories captured

	refMu sync.Mutex    // serializes the writes of the refs files, and guards last
	last  map[string]ID // by owner: the newest id in its refs

	mu     sync.Mutex // guards the fields below
	packs  map[string]*pack
	index  map[sum]loc
	caches map[string]*rootCache // by directory
	rules  map[sum]*patternFile  // parsed .gitignore files, by blob
	trees  map[sum][]entry       // decoded trees (never changed once decoded), up to maxTreeCache entries
	ntrees int                   // entries in trees
}

// maxTreeCache bounds the decoded trees kept for the next diff: about 10 MB.
const maxTreeCache = 100_000

// Open opens the store in o.Dir, creating it if needed, and reads its packs' indexes.
func Open(o Options) (*Store, error) {
	if !filepath.IsAbs(o.Dir) {
		return nil, fmt.Errorf("open the snapshot store %q: the path must be absolute", o.Dir)
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	s := &Store{o: o, log: o.Log, dir: filepath.Clean(o.Dir),
		packs: map[string]*pack{}, index: map[sum]loc{}, caches: map[string]*rootCache{},
		last: map[string]ID{}, rules: map[sum]*patternFile{}, trees: map[sum][]entry{}, racy: racyWindow}
	if s.log == nil {
		s.log = slog.Default()
	}
	for _, d := range []string{s.dir, s.sub("packs"), s.sub("refs"), s.sub("cache")} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("open the snapshot store: %w", err)
		}
	}
	lock, err := os.OpenFile(s.sub("lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the snapshot store: %w", err)
	}
	if err := flock(lock, syscall.LOCK_SH); err != nil {
		lock.Close()
		return nil, fmt.Errorf("open the snapshot store: lock: %w", err)
	}
	s.lock = lock
	s.mu.Lock()
	err = s.loadPacks()
	s.mu.Unlock()
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// Close releases the store. Operations must have returned.
func (s *Store) Close() error {
	s.watch.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.packs {
		p.close()
	}
	s.packs, s.index, s.trees, s.ntrees = map[string]*pack{}, map[sum]loc{}, map[sum][]entry{}, 0
	if s.lock == nil {
		return nil
	}
	err := s.lock.Close() // releases the flock
	s.lock = nil
	return err
}

func (s *Store) sub(name string) string { return filepath.Join(s.dir, name) }

// loadPacks reads the indexes of the packs not loaded yet: at Open, and when an object is
// missing (another process may have added a pack since). s.mu must be held.
func (s *Store) loadPacks() error {
	ents, err := os.ReadDir(s.sub("packs"))
	if err != nil {
		return fmt.Errorf("list snapshot packs: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if !isPackName(name) || s.packs[name] != nil {
			continue
		}
		p, sums, locs, err := readPackIndex(filepath.Join(s.sub("packs"), name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			s.log.Warn("snapshot pack left aside", "pack", name, "err", err)
			continue
		}
		s.addPack(p, sums, locs)
	}
	return nil
}

// addPack puts a pack's objects in the index. s.mu must be held.
func (s *Store) addPack(p *pack, sums []sum, locs []loc) {
	s.packs[p.name] = p
	for i, h := range sums {
		if _, ok := s.index[h]; !ok {
			s.index[h] = locs[i]
		}
	}
}

// has reports whether the store holds object h.
func (s *Store) has(h sum) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.index[h]
	return ok
}

// object returns the raw bytes of object h.
func (s *Store) object(h sum) ([]byte, error) {
	s.mu.Lock()
	l, ok := s.index[h]
	if !ok {
		if err := s.loadPacks(); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		l, ok = s.index[h]
	}
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("object %s: %w", h, errMissing)
	}
	return l.read(h)
}

// tree returns the entries of tree h. The caller must not change them.
func (s *Store) tree(h sum) ([]entry, error) {
	if h == emptyTree {
		return nil, nil
	}
	s.mu.Lock()
	ents, ok := s.trees[h]
	s.mu.Unlock()
	if ok {
		return ents, nil
	}
	b, err := s.object(h)
	if err != nil {
		return nil, err
	}
	if ents, err = decodeTree(b); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ntrees+len(ents) > maxTreeCache {
		s.trees, s.ntrees = map[sum][]entry{}, 0
	}
	if _, ok := s.trees[h]; !ok {
		s.trees[h] = ents
		s.ntrees += len(ents)
	}
	return ents, nil
}

// record loads a snapshot's record.
func (s *Store) record(id ID) (*record, error) {
	h, err := id.sum()
	if err != nil {
		return nil, err
	}
	b, err := s.object(h)
	if errors.Is(err, errMissing) {
		return nil, fmt.Errorf("snapshot %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	r, err := decodeRecord(b)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	return r, nil
}

// commit finishes a pack writer and adds its objects to the index.
func (s *Store) commit(w *packWriter) error {
	p, sums, locs, err := w.finish()
	if err != nil || p == nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addPack(p, sums, locs)
	return nil
}

// Refs: which snapshots each owner keeps. refs/KEY holds the owner's name on its first line
// and its snapshot ids, one a line; a capture appends, a prune rewrites.

func ownerKey(owner string) string {
	h := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(h[:16])
}

// addRef records that owner keeps id, unless it is already its newest.
func (s *Store) addRef(owner string, id ID) error {
	s.refMu.Lock()
	defer s.refMu.Unlock()
	if s.last[owner] == id {
		return nil
	}
	path := filepath.Join(s.sub("refs"), ownerKey(owner))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("record the snapshot for %s: %w", owner, err)
	}
	line := string(id) + "\n"
	if info, err := f.Stat(); err == nil && info.Size() == 0 {
		line = "owner " + quoteOwner(owner) + "\n" + line
	} else if err == nil {
		// A line torn by a crash is ended first, so that it does not swallow this one.
		var last [1]byte
		if _, err := f.ReadAt(last[:], info.Size()-1); err == nil && last[0] != '\n' {
			line = "\n" + line
		}
	}
	_, err = f.WriteString(line)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("record the snapshot for %s: %w", owner, err)
	}
	s.last[owner] = id
	return nil
}

// readRefs returns every owner's ids, by owner.
func (s *Store) readRefs() (map[string][]ID, error) {
	ents, err := os.ReadDir(s.sub("refs"))
	if err != nil {
		return nil, fmt.Errorf("read snapshot refs: %w", err)
	}
	out := map[string][]ID{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		owner, ids, err := readRefFile(filepath.Join(s.sub("refs"), e.Name()))
		if err != nil {
			return nil, err
		}
		out[owner] = append(out[owner], ids...)
	}
	return out, nil
}

func readRefFile(path string) (string, []ID, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, fmt.Errorf("read snapshot refs: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	owner := ""
	var ids []ID
	for sc.Scan() {
		line := sc.Text()
		if q, ok := strings.CutPrefix(line, "owner "); ok && owner == "" {
			owner, _ = strconv.Unquote(q)
			continue
		}
		if _, ok := parseSum(line); ok {
			ids = append(ids, ID(line))
		}
		// anything else is a line torn by a crash: the capture that wrote it never returned
	}
	if err := sc.Err(); err != nil {
		return "", nil, fmt.Errorf("read snapshot refs %s: %w", filepath.Base(path), err)
	}
	return owner, ids, nil
}

func quoteOwner(owner string) string { return strconv.Quote(owner) }
