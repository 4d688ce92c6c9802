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
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"myco/agent/model"
)

// ErrNotFound reports a session id with no file in the store.
var ErrNotFound = errors.New("sessions: not found")

// Store keeps sessions as files in one directory. It is safe for concurrent use by one
// writer per session; callers serialize the writes of a session (the runner's writer gate).
type Store struct {
	dir string
}

// NewStore returns a store over dir, which must exist.
func NewStore(dir string) *Store { return &Store{dir: dir} }

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

// record is one line of a session log. Exactly one of the pointers is set.
type record struct {
	Kind    string     `json:"kind"`
	Session *metaRec   `json:"session,omitempty"`
	Thread  *threadRec `json:"thread,omitempty"`
	Message *msgRec    `json:"message,omitempty"`
	Usage   *usageRec  `json:"usage,omitempty"`
}

// metaRec carries the session's metadata: the first line of every file, and again whenever
// the metadata changes (the last one wins).
type metaRec struct {
	Version    int       `json:"version"`
	ID         string    `json:"id"`
	Created    time.Time `json:"created"`
	Model      string    `json:"model,omitempty"`
	Title      string    `json:"title,omitempty"`
	Links      []string  `json:"links,omitempty"`
	Scratchpad string    `json:"scratchpad,omitempty"`
	Archived   bool      `json:"archived,omitempty"`
	Parent     string    `json:"parent,omitempty"`
	Hidden     bool      `json:"hidden,omitempty"`
}

type threadRec struct {
	ID          string    `json:"id"`
	Created     time.Time `json:"created"`
	Predecessor string    `json:"predecessor,omitempty"`
}

// msgRec appends a message to a thread at Index. An Index below the thread's length
// rewinds the thread to Index first.
type msgRec struct {
	Thread string `json:"thread"`
	Index  int    `json:"index"`
	Entry
}

type usageRec struct {
	Thread string      `json:"thread"`
	Usage  model.Usage `json:"usage"`
}

func metaOf(s *Session) *metaRec {
	return &metaRec{Version: Version, ID: s.ID, Created: s.Created, Model: s.Model, Title: s.Title,
		Links: s.Links, Scratchpad: s.Scratchpad, Archived: s.Archived, Parent: s.Parent, Hidden: s.Hidden}
}

// encode renders records as checksummed lines: 8 hex digits of the CRC-32C of the JSON,
// a space, the JSON, a newline.
func encode(recs ...record) ([]byte, error) {
	var buf bytes.Buffer
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encode %s record: %w", r.Kind, err)
		}
		fmt.Fprintf(&buf, "%08x ", crc32.Checksum(b, castagnoli))
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Create writes a new session with one empty thread. The file appears whole or not at all.
func (s *Store) Create(ctx context.Context, sess *Session) error {
	if !idPattern.MatchString(sess.ID) {
		return fmt.Errorf("create session: invalid id %q", sess.ID)
	}
	if len(sess.Threads) == 0 {
		sess.Threads = []*Thread{{ID: "t1", Created: sess.Created}}
	}
	recs := []record{{Kind: "session", Session: metaOf(sess)}}
	for _, t := range sess.Threads {
		recs = append(recs, record{Kind: "thread", Thread: &threadRec{ID: t.ID, Created: t.Created, Predecessor: t.Predecessor}})
		for i, e := range t.Entries {
			recs = append(recs, record{Kind: "message", Message: &msgRec{Thread: t.ID, Index: i, Entry: e}})
		}
	}
	data, err := encode(recs...)
	if err != nil {
		return err
	}
	path := s.Path(sess.ID)
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("create session %s: %s already exists", sess.ID, path)
	}
	if err := writeFileAtomic(path, data); err != nil {
		return fmt.Errorf("create session %s: %w", sess.ID, err)
	}
	return nil
}

// Append durably adds entries to the end of thread t of sess (in memory and on disk). The
// entries are written and synced before Append returns; on error the in-memory session is
// left unchanged.
func (s *Store) Append(ctx context.Context, sess *Session, t *Thread, entries ...Entry) error {
	if len(entries) == 0 {
		return nil
	}
	recs := make([]record, len(entries))
	for i, e := range entries {
		recs[i] = record{Kind: "message", Message: &msgRec{Thread: t.ID, Index: len(t.Entries) + i, Entry: e}}
	}
	if err := s.appendRecords(sess.ID, recs...); err != nil {
		return err
	}
	t.Entries = append(t.Entries, entries...)
	return nil
}

// SetUsage durably records the latest usage report of thread t.
func (s *Store) SetUsage(ctx context.Context, sess *Session, t *Thread, u model.Usage) error {
	if err := s.appendRecords(sess.ID, record{Kind: "usage", Usage: &usageRec{Thread: t.ID, Usage: u}}); err != nil {
		return err
	}
	t.Usage = u
	return nil
}

// SaveMeta durably records the session's current metadata.
func (s *Store) SaveMeta(ctx context.Context, sess *Session) error {
	return s.appendRecords(sess.ID, record{Kind: "session", Session: metaOf(sess)})
}

func (s *Store) appendRecords(id string, recs ...record) error {
	data, err := encode(recs...)
	if err != nil {
		return err
	}
	path := s.Path(id)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("checkpoint session %s: %w", id, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("checkpoint session %s: write %s: %w", id, path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("checkpoint session %s: sync %s: %w", id, path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("checkpoint session %s: close %s: %w", id, path, err)
	}
	return nil
}

// LoadError is a session file that cannot be read as a session. The file is left as it was.
type LoadError struct {
	Path string
	Line int // 0 when the problem is not on one line
	Msg  string
}

func (e *LoadError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Load reads session id. Loading never writes.
func (s *Store) Load(ctx context.Context, id string) (*Session, error) {
	if !idPattern.MatchString(id) {
		return nil, fmt.Errorf("load session %q: %w", id, ErrNotFound)
	}
	path := s.Path(id)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", id, err)
	}
	return Decode(path, data)
}

// Decode parses a session log. path is used in error messages only.
func Decode(path string, data []byte) (*Session, error) {
	var sess *Session
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			break // a torn last line: it was never acknowledged
		}
		line := data[:nl]
		data = data[nl+1:]
		last := len(data) == 0
		rec, err := decodeLine(line)
		if err != nil {
			if last && sess != nil {
				break // a torn or garbled last write
			}
			return nil, &LoadError{Path: path, Line: lineNo, Msg: err.Error()}
		}
		if sess == nil {
			if rec.Kind != "session" || rec.Session == nil {
				return nil, &LoadError{Path: path, Line: lineNo, Msg: "first record is not a session header"}
			}
		}
		if err := apply(&sess, rec); err != nil {
			return nil, &LoadError{Path: path, Line: lineNo, Msg: err.Error()}
		}
	}
	if sess == nil {
		return nil, &LoadError{Path: path, Msg: "empty session file"}
	}
	if len(sess.Threads) == 0 {
		return nil, &LoadError{Path: path, Msg: "session has no thread"}
	}
	return sess, nil
}

func decodeLine(line []byte) (record, error) {
	var rec record
	if len(line) < 10 || line[8] != ' ' {
		return rec, errors.New("not a checksummed record")
	}
	var sum uint32
	if _, err := fmt.Sscanf(string(line[:8]), "%08x", &sum); err != nil {
		return rec, errors.New("bad checksum field")
	}
	body := line[9:]
	if crc32.Checksum(body, castagnoli) != sum {
		return rec, errors.New("checksum mismatch: the record is damaged")
	}
	if err := json.Unmarshal(body, &rec); err != nil {
		return rec, fmt.Errorf("bad record: %w", err)
	}
	return rec, nil
}

func apply(sp **Session, rec record) error {
	switch rec.Kind {
	case "session":
		m := rec.Session
		if m == nil {
			return errors.New("session record without metadata")
		}
		if m.Version > Version {
			return fmt.Errorf("session schema version %d is newer than this myco understands (version %d); upgrade myco", m.Version, Version)
		}
		if m.Version < Version {
			return fmt.Errorf("session record of schema version %d inside a version %d log", m.Version, Version)
		}
		s := *sp
		if s == nil {
			s = &Session{}
			*sp = s
		} else if m.ID != s.ID {
			return fmt.Errorf("metadata for session %q inside session %q", m.ID, s.ID)
		}
		s.ID, s.Created, s.Model, s.Title, s.Links = m.ID, m.Created, m.Model, m.Title, m.Links
		s.Scratchpad, s.Archived, s.Parent, s.Hidden = m.Scratchpad, m.Archived, m.Parent, m.Hidden
	case "thread":
		t := rec.Thread
		if t == nil || t.ID == "" {
			return errors.New("thread record without id")
		}
		s := *sp
		if s.Thread(t.ID) != nil {
			return fmt.Errorf("thread %q declared twice", t.ID)
		}
		if prev := s.Latest(); prev != nil {
			prev.Successor = t.ID
		}
		s.Threads = append(s.Threads, &Thread{ID: t.ID, Created: t.Created, Predecessor: t.Predecessor})
	case "message":
		m := rec.Message
		if m == nil {
			return errors.New("message record without message")
		}
		t := (*sp).Thread(m.Thread)
		if t == nil {
			return fmt.Errorf("message for unknown thread %q", m.Thread)
		}
		if m.Index < 0 || m.Index > len(t.Entries) {
			return fmt.Errorf("message index %d in thread %q of %d messages", m.Index, m.Thread, len(t.Entries))
		}
		t.Entries = append(t.Entries[:m.Index], m.Entry)
	case "usage":
		u := rec.Usage
		if u == nil {
			return errors.New("usage record without usage")
		}
		t := (*sp).Thread(u.Thread)
		if t == nil {
			return fmt.Errorf("usage for unknown thread %q", u.Thread)
		}
		t.Usage = u.Usage
	default:
		// A record kind from a newer minor revision: skip it rather than refuse the file.
	}
	return nil
}

// Summary is one row of a session listing.
type Summary struct {
	ID       string
	Title    string
	Created  time.Time
	Modified time.Time
	Hidden   bool
	Archived bool
	Parent   string
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
		sum := Summary{ID: meta.ID, Title: meta.Title, Created: meta.Created, Hidden: meta.Hidden, Archived: meta.Archived, Parent: meta.Parent}
		if info != nil {
			sum.Modified = info.ModTime()
		}
		out = append(out, sum)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

// readMeta reads the session's metadata without decoding messages: every "session" record
// (the last wins).
func (s *Store) readMeta(id string) (*metaRec, error) {
	f, err := os.Open(s.Path(id))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var meta *metaRec
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
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
	return meta, nil
}

// writeFileAtomic writes data to path through a synced temporary file and a rename, then
// syncs the directory, so path holds either nothing or all of data.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename this fails harmlessly
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
