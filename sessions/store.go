package sessions

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"myco.dev/internal/atomicfile"
)

// ErrNotFound reports a session id with no file in the store.
var ErrNotFound = errors.New("sessions: not found")

// Store keeps sessions as files in one directory, one append-only log each. It is pure
// I/O: its methods read and write records and return what they read or wrote, and never
// change a [Session] in memory; the one owner of a session's in-memory document (see
// document.go) changes it after a write succeeded. It is safe for concurrent use. Every
// write to a session's file happens with the session's writer gate held (see
// [Store.lockSession]), which orders the writers of one session across runtimes and
// processes.
type Store struct {
	dir string

	// openLog opens a session file for appending; tests replace it to fail writes.
	openLog func(path string) (logFile, error)

	metas sync.Map // session id -> metaCache; see readMeta
	gates sync.Map // session id -> chan struct{}: the in-process writer gate; see lockSession
	held  sync.Map // session id -> struct{}: this store holds the session's file lock now
}

// logFile is what an append needs of an open file.
type logFile interface {
	io.Writer
	Sync() error
	Close() error
}

// NewStore returns a store over dir, which must exist.
func NewStore(dir string) *Store {
	return &Store{dir: dir, openLog: func(path string) (logFile, error) {
		return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	}}
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

const fileExt = ".session"

var idPattern = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z_-]{0,63}$`)

// Path returns the file of session id.
func (s *Store) Path(id string) string { return filepath.Join(s.dir, id+fileExt) }

// NewID returns a fresh session id: sortable by creation time, unique by a random suffix.
func NewID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// fileState is what a document was read from or last wrote: the file's identity and the
// length of its valid records. A file whose identity or length differs was changed by
// another writer (or ends in a torn write, never acknowledged).
type fileState struct {
	info os.FileInfo // nil when unknown
	size int64
}

// Create writes a new session; one without threads is written with one empty thread, t1.
// The file appears whole or not at all. sess is not changed: [Store.Load] returns the
// session as written.
func (s *Store) Create(ctx context.Context, sess *Session) error {
	if !idPattern.MatchString(sess.ID) {
		return fmt.Errorf("create session: invalid id %q", sess.ID)
	}
	if len(sess.Threads) == 0 {
		cp := *sess
		cp.Threads = []*Thread{{ID: "t1", Created: sess.Created}}
		sess = &cp
	}
	path := s.Path(sess.ID)
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("create session %s: %s already exists", sess.ID, path)
	}
	if _, err := s.rewrite(sess.ID, wholeRecords(sess)); err != nil {
		return fmt.Errorf("create session %s: %w", sess.ID, err)
	}
	return nil
}

// rewrite writes recs as the whole file of session id, a fresh version 5 log, through a
// temporary file and a rename, and returns what it wrote.
func (s *Store) rewrite(id string, recs []record) (fileState, error) {
	data, err := encode(recs...)
	if err != nil {
		return fileState{}, err
	}
	if err := atomicfile.Write(s.Path(id), data, 0o600); err != nil {
		return fileState{}, err
	}
	st, err := os.Stat(s.Path(id))
	if err != nil {
		return fileState{}, err
	}
	return fileState{info: st, size: int64(len(data))}, nil
}

// keepOld copies the file of session id, of schema version, to ID.session.vN before an
// upgrade rewrites it.
func (s *Store) keepOld(id string, version int) error {
	path := s.Path(id)
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return atomicfile.Write(fmt.Sprintf("%s.v%d", path, version), old, 0o600)
}

// appendRecords durably appends recs to the file of session id: they are written and
// synced before it returns. It returns the bytes it wrote and synced, which are in the file
// even when it also returns an error (the close failed).
func (s *Store) appendRecords(id string, recs ...record) (int64, error) {
	data, err := encode(recs...)
	if err != nil {
		return 0, err
	}
	path := s.Path(id)
	f, err := s.openLog(path)
	if err != nil {
		return 0, fmt.Errorf("checkpoint session %s: %w", id, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return 0, fmt.Errorf("checkpoint session %s: %w", id, onPath("write", path, err))
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, fmt.Errorf("checkpoint session %s: %w", id, onPath("sync", path, err))
	}
	n := int64(len(data)) // written and synced, whatever Close says
	if err := f.Close(); err != nil {
		return n, fmt.Errorf("checkpoint session %s: %w", id, onPath("close", path, err))
	}
	return n, nil
}

// onPath names op and path in err, unless err already does (an *os.File's errors do),
// so that no message says "write PATH: write PATH:".
func onPath(op, path string, err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok && pe.Path == path {
		return err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// Load reads session id. Loading never writes: a file of an older schema is upgraded in
// memory only, and tool calls a stopped process left unresolved get their recovered
// outcomes in memory (written by the next append).
func (s *Store) Load(ctx context.Context, id string) (*Session, error) {
	sess, _, err := s.load(ctx, id)
	return sess, err
}

// load is [Store.Load] that also returns what the session was read from.
func (s *Store) load(ctx context.Context, id string) (*Session, fileState, error) {
	if !idPattern.MatchString(id) {
		return nil, fileState{}, fmt.Errorf("load session %q: %w", id, ErrNotFound)
	}
	path := s.Path(id)
	data, info, err := readFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fileState{}, fmt.Errorf("load session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fileState{}, fmt.Errorf("load session %s: %w", id, err)
	}
	sess, valid, err := decode(path, data)
	if err != nil {
		return nil, fileState{}, fmt.Errorf("load session %s: %w", id, err)
	}
	if sess.ID != id {
		return nil, fileState{}, fmt.Errorf("load session %s: %w", id, &LoadError{Path: path, Msg: fmt.Sprintf("the file holds session %q", sess.ID)})
	}
	return sess, fileState{info: info, size: valid}, nil
}

// readFile reads path and returns the identity of the file it read.
func readFile(path string) ([]byte, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(f)
	return data, info, err
}

// Summary is one row of a session listing.
type Summary struct {
	ID       string
	Title    string
	Model    string // the catalog key the next turn uses, when the metadata names one
	Created  time.Time
	Modified time.Time
	Hidden   bool
	Archived bool
	Parent   string
	// RequestID is the API request that created the session, if any, and RequestSum the
	// digest of what it asked.
	RequestID, RequestSum string
}

// List returns the sessions in the store, newest first. Files that cannot be read are
// skipped.
func (s *Store) List(ctx context.Context) ([]Summary, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	var out []Summary
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, fileExt) || e.IsDir() {
			continue
		}
		id := strings.TrimSuffix(name, fileExt)
		meta, err := s.readMeta(id)
		if err != nil {
			continue
		}
		info, _ := e.Info()
		model := meta.Selected
		if model == "" {
			model = meta.Model
		}
		sum := Summary{ID: meta.ID, Title: meta.Title, Model: model, Created: meta.Created, Hidden: meta.Hidden, Archived: meta.Archived, Parent: meta.Parent, RequestID: meta.RequestID, RequestSum: meta.RequestSum}
		if info != nil {
			sum.Modified = info.ModTime()
		}
		out = append(out, sum)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

// metaCache remembers what readMeta read of a session file: the file's identity, how far
// it read, and the metadata it found. A log only grows, so the next read starts there.
type metaCache struct {
	file   os.FileInfo
	offset int64
	meta   *metaRec
}

// readMeta reads the session's metadata without decoding messages: every "session" record
// (the last wins), reading only what was appended since the last call for the same file.
func (s *Store) readMeta(id string) (*metaRec, error) {
	f, err := os.Open(s.Path(id))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var c metaCache
	if v, ok := s.metas.Load(id); ok {
		c = v.(metaCache)
		if !os.SameFile(c.file, info) || info.Size() < c.offset {
			c = metaCache{}
		}
	}
	if c.meta != nil && info.Size() == c.offset {
		return c.meta, nil
	}
	if _, err := f.Seek(c.offset, io.SeekStart); err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	if c.offset == 0 {
		if b, err := r.Peek(1); err == nil && b[0] == '{' {
			data, err := io.ReadAll(r)
			if err != nil {
				return nil, err
			}
			var d legacyDoc
			if err := json.Unmarshal(data, &d); err != nil || d.Version < 2 || d.Version >= Version {
				return nil, errors.New("not a session document")
			}
			return &metaRec{Version: d.Version, ID: d.ID, Created: d.Created, Model: d.Model, Title: d.Title,
				Links: d.Links, Scratchpad: d.Scratchpad, Parent: d.Parent, Hidden: d.Hidden}, nil
		}
	}
	meta, offset := c.meta, c.offset
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // a torn last line is read again next time
		}
		if err != nil {
			return nil, err
		}
		offset += int64(len(line))
		if !bytes.Contains(line, []byte(`{"kind":"session"`)) {
			continue
		}
		rec, derr := decodeLine(bytes.TrimSuffix(line, []byte("\n")))
		if derr == nil && rec.Session != nil {
			meta = rec.Session
		}
	}
	if meta == nil {
		return nil, errors.New("no session header")
	}
	s.metas.Store(id, metaCache{file: info, offset: offset, meta: meta})
	return meta, nil
}
