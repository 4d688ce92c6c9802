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
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"myco.dev/agent/model"
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
	// openRead opens a session file for a load ([openRegular]); tests replace it to make
	// a load slow.
	openRead func(path string) (*os.File, os.FileInfo, error)

	family   family   // who is whose parent; see family.go
	metas    sync.Map // session id -> metaCache; see readMeta
	failures sync.Map // session id -> failure: the last load of its file failed; see noteLoad
	gates    sync.Map // session id -> chan struct{}: the in-process writer gate; see lockSession
	held     sync.Map // session id -> struct{}: this store holds the session's file lock now
	listed   sync.Map // session id -> listedRow: its row as a listing last read it; see List
}

// listRevalidate is how long a listing trusts a row it read, unless this store changed the
// session since: another process's appends show within it. Each row's time is spread over
// it, so that a listing of many sessions reads a few of them again, not all at once.
const listRevalidate = 10 * time.Second

// listedRow is a session's row as a listing read it: ok is false for a file with nothing
// to list (gone, or unreadable).
type listedRow struct {
	sum Summary
	ok  bool
	at  time.Time // when it is to be read again
}

// relist forgets the listing's row of session id, which this store just changed.
func (s *Store) relist(id string) { s.listed.Delete(id) }

// logFile is what an append needs of an open file.
type logFile interface {
	io.Writer
	Sync() error
	Close() error
}

// NewStore returns a store over dir, which must exist.
func NewStore(dir string) *Store {
	return &Store{dir: dir, openLog: func(path string) (logFile, error) {
		// O_NONBLOCK: a FIFO put where the session file was fails at once (no reader)
		// rather than hanging the writer.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0)
		if err != nil {
			if le := specialFile(path, err); le != nil {
				return nil, le
			}
			return nil, err
		}
		if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
			f.Close()
			return nil, &LoadError{Path: path, Msg: notRegular(info)}
		}
		return f, nil
	}, openRead: openRegular}
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

// same reports whether f and g are the same file at the same length.
func (f fileState) same(g fileState) bool {
	return f.info != nil && g.info != nil && os.SameFile(f.info, g.info) && f.size == g.size
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
	s.created(sess.ID, sess.Parent)
	s.relist(sess.ID)
	return nil
}

// rewrite writes recs as the whole file of session id, a fresh version 5 log, through a
// temporary file and a rename, and returns what it wrote.
func (s *Store) rewrite(id string, recs []record) (fileState, error) {
	data, err := encode(recs...)
	if err != nil {
		return fileState{}, err
	}
	defer s.relist(id)
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
	old, _, err := s.readFile(path)
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
	defer s.relist(id)
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
	data, info, err := s.readFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fileState{}, fmt.Errorf("load session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fileState{}, fmt.Errorf("load session %s: %w", id, err)
	}
	sess, valid, err := decode(path, data)
	if err == nil && sess.ID != id {
		err = &LoadError{Path: path, Msg: fmt.Sprintf("the file holds session %q", sess.ID)}
	}
	s.noteLoad(id, info, err)
	if err != nil {
		return nil, fileState{}, fmt.Errorf("load session %s: %w", id, err)
	}
	return sess, fileState{info: info, size: valid}, nil
}

// readFile reads the session file path and returns the identity of the file it read.
func (s *Store) readFile(path string) ([]byte, os.FileInfo, error) {
	f, info, err := s.openRead(path)
	if err != nil {
		return nil, info, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	return data, info, err
}

// openRegular opens the session file path for reading, without blocking: a FIFO, a
// directory, a socket or a device where a session file should be is a [*LoadError] (the
// session is damaged) that names the file and what it is, returned with the file's info. A
// FIFO opened without O_NONBLOCK would block until a writer came, and with it every page
// that lists or shows the session.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if le := specialFile(path, err); le != nil {
			info, _ := os.Lstat(path)
			return nil, info, le
		}
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, info, &LoadError{Path: path, Msg: notRegular(info)}
	}
	return f, info, nil
}

// specialFile is the [*LoadError] of a failed open of path (err) when path is not a regular
// file (a socket cannot be opened at all, a FIFO not for writing without a reader: ENXIO),
// so that the error says what it is rather than "no such device or address"; nil else.
func specialFile(path string, err error) *LoadError {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if info, lerr := os.Lstat(path); lerr == nil && !info.Mode().IsRegular() && info.Mode()&fs.ModeSymlink == 0 {
		return &LoadError{Path: path, Msg: notRegular(info)}
	}
	return nil
}

// notRegular says what a file that should be a regular one is instead.
func notRegular(info os.FileInfo) string {
	what := "not a regular file"
	switch {
	case info == nil:
	case info.IsDir():
		what = "a directory, not a regular file"
	case info.Mode()&fs.ModeNamedPipe != 0:
		what = "a FIFO (named pipe), not a regular file"
	case info.Mode()&fs.ModeSocket != 0:
		what = "a socket, not a regular file"
	case info.Mode()&fs.ModeDevice != 0:
		what = "a device, not a regular file"
	}
	return what + "; a session file must be a regular file"
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
	// Cwd is the session's directory; empty for a session saved before it was kept (the
	// service's listing fills in its own directory).
	Cwd string
	// RequestID is the API request that created the session, if any, and RequestSum the
	// digest of what it asked.
	RequestID, RequestSum string
	// Problem says why the session's file cannot be used, for one that this myco cannot
	// load ([LoadError.Problem]): "needs a newer myco (…)" or "damaged: FILE:LINE: …". Only
	// ID, Created (the file's time) and Modified are set then.
	Problem string
	Row
}

// Row is what a listing shows of a session beyond its metadata, read from its log on the
// way to the metadata (see [Store.List]): its turns, how the last one ended, a preview of
// its last answer and the tokens it spent, by model.
type Row struct {
	Turns int // turns that ended (a compaction's end is not one)
	// LastStatus and LastCode are how the last turn ended (a turn record's status and
	// code); Open reports a turn that started after it and has not ended: it runs, or the
	// process running it stopped.
	LastStatus, LastCode string
	Open                 bool
	Queued               int     // messages waiting for the next turn
	Approvals            int     // tool calls waiting for the person's answer
	MaxCost              float64 // the session's budget, if it has one of its own
	// Preview is the first line of the last answer (a model message's text), at most
	// previewMax bytes.
	Preview string
	SpentBy map[string]model.Usage // the tokens spent by catalog key ("" for records without one)
}

// previewMax bounds a row's preview of the last answer.
const previewMax = 240

// File is a session file as the directory has it: its session, size and time.
type File struct {
	ID      string
	Size    int64
	ModTime time.Time
}

// Files returns the store's session files, with their sizes and times, in no order. It
// reads the directory and no file: for a reader that wants the files, not their rows (the
// search index).
func (s *Store) Files(ctx context.Context) ([]File, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list session files: %w", err)
	}
	out := make([]File, 0, len(entries))
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), fileExt)
		if !ok || !idPattern.MatchString(id) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // gone since the directory was read
		}
		out = append(out, File{ID: id, Size: info.Size(), ModTime: info.ModTime()})
	}
	return out, ctx.Err()
}

// List returns the sessions in the store, newest first. A file that cannot be loaded as a
// session (a newer schema, damage) is listed with its Problem rather than left out.
func (s *Store) List(ctx context.Context) ([]Summary, error) {
	d, err := os.Open(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	now := time.Now()
	out := make([]Summary, 0, len(names))
	var read []string // the sessions whose rows are read again
	for _, name := range names {
		if !strings.HasSuffix(name, fileExt) {
			continue
		}
		id := strings.TrimSuffix(name, fileExt)
		if !idPattern.MatchString(id) {
			continue
		}
		if v, ok := s.listed.Load(id); ok && now.Before(v.(listedRow).at) {
			if r := v.(listedRow); r.ok {
				out = append(out, r.sum)
			}
			continue
		}
		read = append(read, id)
	}
	rows := make([]listedRow, len(read))
	each := func(i int) {
		id := read[i]
		sum, ok := s.summary(id)
		spread := time.Duration(crc32.ChecksumIEEE([]byte(id))) % listRevalidate
		rows[i] = listedRow{sum: sum, ok: ok, at: now.Add(listRevalidate/2 + spread/2)}
		s.listed.Store(id, rows[i])
	}
	// A listing that reads many files (the first of a process reads them all) reads them
	// a processor each: each row is its own file's, and its caches are per session.
	if workers := min(goruntime.GOMAXPROCS(0), len(read)/listParallel); workers > 1 {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < len(read); i = int(next.Add(1)) - 1 {
					each(i)
				}
			})
		}
		wg.Wait()
	} else {
		for i := range read {
			each(i)
		}
	}
	for _, r := range rows {
		if r.ok {
			out = append(out, r.sum)
		}
	}
	slices.SortFunc(out, func(a, b Summary) int { return b.Created.Compare(a.Created) })
	return out, nil
}

// listParallel is how many files a listing reads again, per processor, before it reads
// them side by side.
const listParallel = 32

// summary reads the row of session id for a listing, or reports false for a file with
// nothing to list.
func (s *Store) summary(id string) (Summary, bool) {
	{
		meta, info, err := s.readMeta(id)
		var le *LoadError
		switch {
		case errors.As(err, &le):
			return Summary{ID: id, Created: info.ModTime(), Modified: info.ModTime(), Problem: le.Problem()}, true
		case err != nil:
			return Summary{}, false // gone, or unreadable: nothing to show
		}
		model := meta.Selected
		if model == "" {
			model = meta.Model
		}
		sum := Summary{ID: meta.ID, Title: meta.Title, Model: model, Created: meta.Created, Hidden: meta.Hidden, Archived: meta.Archived, Parent: meta.Parent, Cwd: meta.Cwd, RequestID: meta.RequestID, RequestSum: meta.RequestSum,
			Modified: info.ModTime()}
		if le := s.loadFailure(id, info); le != nil {
			sum.Problem = le.Problem()
		}
		if v, ok := s.metas.Load(id); ok && os.SameFile(v.(metaCache).file, info) {
			sum.Row = v.(metaCache).row
		}
		return sum, true
	}
}

// failure is a load of a session file that failed, and the file it failed on.
type failure struct {
	info os.FileInfo
	err  *LoadError
}

// noteLoad remembers how loading session id from the file info ended: a [LoadError] is
// kept for listings (readMeta sees only the metadata), anything else forgets it.
func (s *Store) noteLoad(id string, info os.FileInfo, err error) {
	s.relist(id)
	if le, ok := errors.AsType[*LoadError](err); ok && info != nil {
		s.failures.Store(id, failure{info: info, err: le})
		return
	}
	s.failures.Delete(id)
}

// loadFailure returns the LoadError of the last load of session id when it was of the file
// as it is now (info).
func (s *Store) loadFailure(id string, info os.FileInfo) *LoadError {
	v, ok := s.failures.Load(id)
	if !ok {
		return nil
	}
	f := v.(failure)
	if !os.SameFile(f.info, info) || f.info.Size() != info.Size() || !f.info.ModTime().Equal(info.ModTime()) {
		return nil
	}
	return f.err
}

// metaCache remembers what readMeta read of a session file: the file's identity, how far
// it read (bytes and lines), and the metadata it found. A log only grows, so the next read
// starts there.
type metaCache struct {
	file   os.FileInfo
	offset int64
	lines  int
	meta   *metaRec
	row    Row // what was read of the rows' fields so far
}

// readMeta reads the session's metadata without decoding messages: every "session" record
// (the last wins), reading only what was appended since the last call for the same file.
// Every line's checksum is checked on the way (cheap next to the read), so damage is found
// without a full load; like a load, it takes a bad last line for a torn write, which it
// reads again next time. A file that is no session this myco can read is a [*LoadError].
// It returns the file's state too.
func (s *Store) readMeta(id string) (*metaRec, os.FileInfo, error) {
	path := s.Path(id)
	// The common case of a listing: the file is as it was when last read. One stat says
	// so, without opening it.
	if v, ok := s.metas.Load(id); ok {
		c := v.(metaCache)
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && os.SameFile(c.file, st) && st.Size() == c.offset && st.ModTime().Equal(c.file.ModTime()) {
			return c.meta, st, nil
		}
	}
	f, info, err := openRegular(path)
	if err != nil {
		return nil, info, err
	}
	defer f.Close()
	var c metaCache
	if v, ok := s.metas.Load(id); ok {
		c = v.(metaCache)
		if !os.SameFile(c.file, info) || info.Size() < c.offset {
			c = metaCache{}
		}
	}
	if c.meta != nil && info.Size() == c.offset {
		return c.meta, info, nil
	}
	if _, err := f.Seek(c.offset, io.SeekStart); err != nil {
		return nil, info, err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	if c.offset == 0 {
		if b, err := r.Peek(1); err == nil && b[0] == '{' {
			data, err := io.ReadAll(r)
			if err != nil {
				return nil, info, err
			}
			var d legacyDoc
			if err := json.Unmarshal(data, &d); err != nil {
				return nil, info, &LoadError{Path: path, Msg: "not a session document: " + err.Error()}
			}
			switch {
			case d.Version > Version:
				return nil, info, loadError(path, 0, &newerSchemaError{d.Version})
			case d.Version < 2 || d.Version == Version:
				return nil, info, &LoadError{Path: path, Msg: fmt.Sprintf("not a session document of a schema this myco reads (version %d)", d.Version)}
			}
			return &metaRec{Version: d.Version, ID: d.ID, Created: d.Created, Model: d.Model, Title: d.Title,
				Links: d.Links, Scratchpad: d.Scratchpad, Parent: d.Parent, Hidden: d.Hidden}, info, nil
		}
	}
	meta, offset, lines, row := c.meta, c.offset, c.lines, c.row
	row.SpentBy = maps.Clone(row.SpentBy)
	var answer []byte // the last assistant message read in this pass, decoded at the end
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // a torn last line is read again next time
		}
		if err != nil {
			return nil, info, err
		}
		body := bytes.TrimSuffix(line, []byte("\n"))
		if !checksummed(body) {
			if _, err := r.Peek(1); err == io.EOF {
				break // a garbled last write: read again next time
			}
			return nil, info, &LoadError{Path: path, Line: lines + 1, Msg: "checksum mismatch: the record is damaged"}
		}
		offset += int64(len(line))
		lines++
		if lines == 1 && !bytes.Contains(body, []byte(`{"kind":"session"`)) {
			return nil, info, &LoadError{Path: path, Line: 1, Msg: "first record is not a session header"}
		}
		if !bytes.HasPrefix(body[9:], []byte(`{"kind":"session"`)) {
			if a := row.note(body[9:]); a != nil {
				answer = a
			}
			continue
		}
		rec, derr := decodeLine(body)
		if derr != nil || rec.Session == nil {
			return nil, info, &LoadError{Path: path, Line: lines, Msg: "bad session record"}
		}
		if rec.Session.Version > Version {
			return nil, info, loadError(path, lines, &newerSchemaError{rec.Session.Version})
		}
		meta = rec.Session
	}
	if meta == nil {
		return nil, info, &LoadError{Path: path, Msg: "empty session file"}
	}
	if answer != nil {
		row.Preview = previewOf(answer)
	}
	row.Queued, row.MaxCost, row.Approvals = len(meta.Queue), meta.MaxCost, len(meta.Approvals)
	s.metas.Store(id, metaCache{file: info, offset: offset, lines: lines, meta: meta, row: row})
	return meta, info, nil
}

// rowRecord is what [Row.note] decodes of a record: not the message's parts.
type rowRecord struct {
	Kind    string `json:"kind"`
	Message *struct {
		Message struct {
			Role model.Role `json:"role"`
		} `json:"message"`
		AcceptedAt   *time.Time `json:"accepted_at"`
		Continuation bool       `json:"continuation"`
		Rejected     bool       `json:"rejected"`
	} `json:"message"`
	Usage *usageRec `json:"usage"`
	Turn  *turnRec  `json:"turn"`
}

// note counts a record of the log (its JSON) into r. It returns the JSON of an assistant
// message, whose text the preview shows if no later one has any.
func (r *Row) note(body []byte) []byte {
	switch {
	case bytes.HasPrefix(body, []byte(`{"kind":"message"`)), bytes.HasPrefix(body, []byte(`{"kind":"usage"`)), bytes.HasPrefix(body, []byte(`{"kind":"turn"`)):
	default:
		return nil
	}
	var rec rowRecord
	if json.Unmarshal(body, &rec) != nil {
		return nil
	}
	switch {
	case rec.Message != nil:
		m := rec.Message
		if (m.AcceptedAt != nil || m.Continuation) && !m.Rejected {
			r.Open = true
		}
		if m.Message.Role == model.Assistant && bytes.Contains(body, []byte(`"kind":"text"`)) {
			return body
		}
	case rec.Usage != nil && !rec.Usage.Carried:
		if r.SpentBy == nil {
			r.SpentBy = map[string]model.Usage{}
		}
		r.SpentBy[rec.Usage.Model] = r.SpentBy[rec.Usage.Model].Add(rec.Usage.Usage)
	case rec.Turn != nil:
		r.Open = false
		if rec.Turn.Status != TurnCompacted {
			r.Turns++
			r.LastStatus, r.LastCode = rec.Turn.Status, rec.Turn.Code
		}
	}
	return nil
}

// previewOf is the first line of the text of the assistant message record body.
func previewOf(body []byte) string {
	var rec struct {
		Message struct {
			Message model.Message `json:"message"`
		} `json:"message"`
	}
	if json.Unmarshal(body, &rec) != nil {
		return ""
	}
	return previewText(rec.Message.Message.Text())
}

// previewText is the first line of an answer's text, without its Markdown marks, cut at
// previewMax bytes.
func previewText(text string) string {
	text = strings.TrimSpace(text)
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = strings.TrimSpace(text[:i])
	}
	// A heading's or a quote's marks are Markdown, not words: "## The fix" reads "The fix".
	text = strings.TrimSpace(strings.TrimLeft(text, "#>"))
	if len(text) > previewMax {
		text = strings.ToValidUTF8(text[:previewMax], "") + "…"
	}
	return text
}

// checksummed reports whether line is a record whose checksum matches its JSON.
func checksummed(line []byte) bool {
	if len(line) < 10 || line[8] != ' ' {
		return false
	}
	sum, err := strconv.ParseUint(string(line[:8]), 16, 32)
	return err == nil && crc32.Checksum(line[9:], castagnoli) == uint32(sum)
}
