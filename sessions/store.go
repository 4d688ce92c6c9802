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

	"myco.dev/agent/model"
	"myco.dev/internal/atomicfile"
)

// ErrNotFound reports a session id with no file in the store.
var ErrNotFound = errors.New("sessions: not found")

// Store keeps sessions as files in one directory. It is safe for concurrent use; writes to
// one session are serialized. Turns and compactions hold the session's writer gate (see
// [runner]), which also keeps the in-memory document and the file in agreement across
// runtimes and processes.
type Store struct {
	dir string

	// openLog opens a session file for appending; tests replace it to fail writes.
	openLog func(path string) (logFile, error)

	locks sync.Map // session id -> *sync.Mutex serializing appends
	metas sync.Map // session id -> metaCache
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

func metaOf(s *Session) *metaRec {
	return &metaRec{Version: Version, ID: s.ID, Created: s.Created, Model: s.Model, Title: s.Title,
		Links: s.Links, Scratchpad: s.Scratchpad, Archived: s.Archived, Parent: s.Parent, Hidden: s.Hidden, Selected: s.Selected,
		RequestID: s.RequestID, Actions: s.Actions}
}

// Create writes a new session with one empty thread. The file appears whole or not at all.
func (s *Store) Create(ctx context.Context, sess *Session) error {
	if !idPattern.MatchString(sess.ID) {
		return fmt.Errorf("create session: invalid id %q", sess.ID)
	}
	if len(sess.Threads) == 0 {
		sess.Threads = []*Thread{{ID: "t1", Created: sess.Created}}
	}
	path := s.Path(sess.ID)
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("create session %s: %s already exists", sess.ID, path)
	}
	if err := s.writeWhole(sess); err != nil {
		return fmt.Errorf("create session %s: %w", sess.ID, err)
	}
	return nil
}

// writeWhole writes sess as a fresh version 5 log through a temporary file and a rename.
func (s *Store) writeWhole(sess *Session) error {
	recs := []record{{Kind: "session", Session: metaOf(sess)}}
	for _, t := range sess.Threads {
		recs = append(recs, record{Kind: "thread", Thread: &threadRec{ID: t.ID, Created: t.Created, Predecessor: t.Predecessor, Reason: t.Reason, Base: t.Base}})
		for i, e := range t.Entries {
			recs = append(recs, record{Kind: "message", Message: &msgRec{Thread: t.ID, Index: i, Entry: e}})
		}
		if t.Usage != (model.Usage{}) {
			recs = append(recs, record{Kind: "usage", Usage: &usageRec{Thread: t.ID, Usage: t.Usage}})
		}
	}
	data, err := encode(recs...)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.Path(sess.ID), data, 0o600); err != nil {
		return err
	}
	st, err := os.Stat(s.Path(sess.ID))
	if err != nil {
		return err
	}
	mu := s.lock(sess.ID)
	mu.Lock()
	sess.file, sess.size = st, int64(len(data))
	mu.Unlock()
	for _, t := range sess.Threads {
		t.saved = len(t.Entries)
	}
	sess.Upgraded = 0
	return nil
}

// Append durably adds entries to the end of thread t of sess (in memory and on disk),
// together with any entries that recovery made on load and that are not on disk yet. The
// entries are written and synced before Append returns; on error the in-memory session is
// left unchanged.
func (s *Store) Append(ctx context.Context, sess *Session, t *Thread, entries ...Entry) error {
	return s.Checkpoint(ctx, sess, t, entries, nil)
}

// Checkpoint is [Store.Append] plus, when usage is not nil, the thread's latest usage
// report, in one write.
func (s *Store) Checkpoint(ctx context.Context, sess *Session, t *Thread, entries []Entry, usage *model.Usage) error {
	if sess.Upgraded != 0 {
		return s.upgrade(sess, t, entries, usage)
	}
	pending := t.Entries[t.saved:]
	if len(pending)+len(entries) == 0 && usage == nil {
		return nil
	}
	recs := make([]record, 0, len(pending)+len(entries)+1)
	for i, e := range pending {
		recs = append(recs, record{Kind: "message", Message: &msgRec{Thread: t.ID, Index: t.saved + i, Entry: e}})
	}
	for i, e := range entries {
		recs = append(recs, record{Kind: "message", Message: &msgRec{Thread: t.ID, Index: len(t.Entries) + i, Entry: e}})
	}
	if usage != nil {
		recs = append(recs, record{Kind: "usage", Usage: &usageRec{Thread: t.ID, Usage: *usage}})
	}
	if err := s.appendRecords(sess, recs...); err != nil {
		return err
	}
	t.Entries = append(t.Entries, entries...)
	t.saved = len(t.Entries)
	if usage != nil {
		t.Usage = *usage
		t.spent = t.spent.Add(*usage)
	}
	for _, e := range entries {
		t.noteEntry(e)
	}
	return nil
}

// Amend appends parts to the last entry of thread t (hidden notes added to the latest
// input or tool result before a model request) and makes the change durable: the entry is
// rewritten in place by a record at its index. On error the in-memory session is left
// unchanged.
func (s *Store) Amend(ctx context.Context, sess *Session, t *Thread, parts []model.Part) error {
	if len(parts) == 0 {
		return nil
	}
	n := len(t.Entries)
	if n == 0 {
		return fmt.Errorf("amend thread %s: the thread is empty", t.ID)
	}
	old := t.Entries[n-1]
	e := old
	e.Message.Parts = append(append([]model.Part(nil), old.Message.Parts...), parts...)
	if sess.Upgraded != 0 || t.saved < n {
		// The entry is not on disk as a version 5 record yet: the write that puts it there
		// carries the amendment.
		t.Entries[n-1] = e
		if err := s.Checkpoint(ctx, sess, t, nil, nil); err != nil {
			t.Entries[n-1] = old
			return err
		}
		return nil
	}
	if err := s.appendRecords(sess, record{Kind: "message", Message: &msgRec{Thread: t.ID, Index: n - 1, Entry: e}}); err != nil {
		return err
	}
	t.Entries[n-1] = e
	return nil
}

// upgrade rewrites a session loaded from an older schema as a version 5 log, with entries
// and usage added, keeping the old file next to it as ID.session.vN.
func (s *Store) upgrade(sess *Session, t *Thread, entries []Entry, usage *model.Usage) error {
	path := s.Path(sess.ID)
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("upgrade session %s: %w", sess.ID, err)
	}
	backup := fmt.Sprintf("%s.v%d", path, sess.Upgraded)
	if err := atomicfile.Write(backup, old, 0o600); err != nil {
		return fmt.Errorf("upgrade session %s: keep the version %d file: %w", sess.ID, sess.Upgraded, err)
	}
	before, usageBefore, from := len(t.Entries), t.Usage, sess.Upgraded
	t.Entries = append(t.Entries, entries...)
	if usage != nil {
		t.Usage = *usage
	}
	if err := s.writeWhole(sess); err != nil {
		t.Entries, t.Usage, sess.Upgraded = t.Entries[:before], usageBefore, from
		return fmt.Errorf("upgrade session %s from version %d: %w", sess.ID, from, err)
	}
	for _, e := range entries {
		t.noteEntry(e)
	}
	return nil
}

// SetUsage durably records the latest usage report of thread t.
func (s *Store) SetUsage(ctx context.Context, sess *Session, t *Thread, u model.Usage) error {
	return s.Checkpoint(ctx, sess, t, nil, &u)
}

// SaveMeta durably records the session's current metadata.
func (s *Store) SaveMeta(ctx context.Context, sess *Session) error {
	if sess.Upgraded != 0 {
		return s.upgrade(sess, sess.Latest(), nil, nil)
	}
	return s.appendRecords(sess, record{Kind: "session", Session: metaOf(sess)})
}

// EndTurn durably records how the current turn of thread t ended: one of [TurnDone],
// [TurnCancelled], [TurnFailed] or [TurnRejected].
func (s *Store) EndTurn(ctx context.Context, sess *Session, t *Thread, status string, cause error) error {
	rec := &turnRec{Thread: t.ID, Status: status, At: time.Now().UTC()}
	if cause != nil {
		rec.Error = cause.Error()
	}
	if err := s.Checkpoint(ctx, sess, t, nil, nil); err != nil {
		return err
	}
	if err := s.appendRecords(sess, record{Kind: "turn", Turn: rec}); err != nil {
		return err
	}
	t.open, t.end = false, status
	t.ends = append(t.ends, TurnEnd{After: len(t.Entries), Status: status, Error: rec.Error, At: rec.At})
	return nil
}

// StartThread durably starts thread t as the successor of the session's latest thread.
// t.Entries are its first messages; inherit, when positive, says that they begin with that
// many leading entries of the predecessor, which are then not written again.
func (s *Store) StartThread(ctx context.Context, sess *Session, t *Thread, inherit int) error {
	prev := sess.Latest()
	if prev == nil {
		return fmt.Errorf("start thread in session %s: the session has no thread", sess.ID)
	}
	if sess.Thread(t.ID) != nil {
		return fmt.Errorf("start thread in session %s: thread %q exists", sess.ID, t.ID)
	}
	if inherit < 0 || inherit > len(prev.Entries) || inherit > len(t.Entries) {
		return fmt.Errorf("start thread in session %s: cannot inherit %d entries", sess.ID, inherit)
	}
	t.Predecessor = prev.ID
	t.Base = len(t.Entries)
	if sess.Upgraded != 0 {
		sess.Threads = append(sess.Threads, t)
		prev.Successor = t.ID
		if err := s.upgrade(sess, t, nil, nil); err != nil {
			sess.Threads = sess.Threads[:len(sess.Threads)-1]
			prev.Successor = ""
			return err
		}
		return nil
	}
	if err := s.Checkpoint(ctx, sess, prev, nil, nil); err != nil { // recovered entries first
		return err
	}
	recs := []record{{Kind: "thread", Thread: &threadRec{ID: t.ID, Created: t.Created, Predecessor: prev.ID, Reason: t.Reason, Inherit: inherit, Base: t.Base}}}
	for i := inherit; i < len(t.Entries); i++ {
		recs = append(recs, record{Kind: "message", Message: &msgRec{Thread: t.ID, Index: i, Entry: t.Entries[i]}})
	}
	if t.Usage != (model.Usage{}) {
		recs = append(recs, record{Kind: "usage", Usage: &usageRec{Thread: t.ID, Usage: t.Usage}})
	}
	if err := s.appendRecords(sess, recs...); err != nil {
		return err
	}
	t.saved = len(t.Entries)
	prev.Successor = t.ID
	sess.Threads = append(sess.Threads, t)
	return nil
}

// recordIntent durably records that a tool call is about to run.
func (s *Store) recordIntent(sess *Session, rec *intentRec) error {
	if sess.Upgraded != 0 {
		return nil // an upgraded file is rewritten by the checkpoint before any tool runs
	}
	return s.appendRecords(sess, record{Kind: "intent", Intent: rec})
}

// recordResult durably records a tool call's result.
func (s *Store) recordResult(sess *Session, rec *resultRec) error {
	if sess.Upgraded != 0 {
		return nil
	}
	return s.appendRecords(sess, record{Kind: "result", Result: rec})
}

// recordProgress durably records the newest output of a running tool call.
func (s *Store) recordProgress(sess *Session, rec *progressRec) error {
	if sess.Upgraded != 0 {
		return nil
	}
	return s.appendRecords(sess, record{Kind: "progress", Progress: rec})
}

func (s *Store) lock(id string) *sync.Mutex {
	mu, _ := s.locks.LoadOrStore(id, new(sync.Mutex))
	return mu.(*sync.Mutex)
}

func (s *Store) appendRecords(sess *Session, recs ...record) error {
	id := sess.ID
	data, err := encode(recs...)
	if err != nil {
		return err
	}
	mu := s.lock(id)
	mu.Lock()
	defer mu.Unlock()
	path := s.Path(id)
	f, err := s.openLog(path)
	if err != nil {
		return fmt.Errorf("checkpoint session %s: %w", id, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("checkpoint session %s: %w", id, onPath("write", path, err))
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("checkpoint session %s: %w", id, onPath("sync", path, err))
	}
	sess.size += int64(len(data)) // written and synced, whatever Close says
	if err := f.Close(); err != nil {
		return fmt.Errorf("checkpoint session %s: %w", id, onPath("close", path, err))
	}
	return nil
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
	if !idPattern.MatchString(id) {
		return nil, fmt.Errorf("load session %q: %w", id, ErrNotFound)
	}
	path := s.Path(id)
	data, info, err := readFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", id, err)
	}
	sess, err := Decode(path, data)
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", id, err)
	}
	if sess.ID != id {
		return nil, fmt.Errorf("load session %s: %w", id, &LoadError{Path: path, Msg: fmt.Sprintf("the file holds session %q", sess.ID)})
	}
	sess.file = info
	return sess, nil
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
	// RequestID is the API request that created the session, if any.
	RequestID string
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
		sum := Summary{ID: meta.ID, Title: meta.Title, Model: model, Created: meta.Created, Hidden: meta.Hidden, Archived: meta.Archived, Parent: meta.Parent, RequestID: meta.RequestID}
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
