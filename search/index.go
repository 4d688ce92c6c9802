package search

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"myco.dev/agent/model"
	"myco.dev/sessions"
)

// Format is the version of the index's schema and of what it holds; an index of another
// format is rebuilt.
const Format = 2

// Source is what the index is built from: the session files of its store, read as
// sessions.
type Source interface {
	Store() *sessions.Store
	Snapshot(ctx context.Context, id string) (*sessions.Session, sessions.Status, error)
	Project(dir string) string
}

// Options configure an [Index].
type Options struct {
	Path   string // the database file; it and its -wal and -shm files are the index's
	Source Source
	Log    *slog.Logger
	// Debounce is how long a changed session waits before it is indexed again, so that a
	// turn's checkpoints cost one update; 0 means 500 ms.
	Debounce time.Duration
}

// Index is the search index of one profile's sessions. Open it with [Open], start its
// worker with [Index.Run], and Close it when done. It is safe for concurrent use.
type Index struct {
	o   Options
	log *slog.Logger
	db  *sql.DB

	mu       sync.Mutex // guards the fields below
	dirty    map[string]time.Time
	building bool // a build from the session files runs: answers are incomplete
	done     int  // sessions the build has indexed so far
	total    int  // sessions it has to index
	failed   []string
	kick     chan struct{}
}

// A session's rows in docs are written in one transaction, so their row ids are one run,
// first to last, which is how they are deleted.
const schema = `
create table if not exists meta(key text primary key, value text not null);
create table if not exists sessions(id text primary key, title text not null, project text not null,
	archived integer not null, modified integer not null, size integer not null, mtime integer not null,
	first integer not null, last integer not null);
create virtual table if not exists docs using fts5(text, session unindexed, thread unindexed, idx unindexed,
	kind unindexed, at unindexed, tokenize = 'unicode61 remove_diacritics 2');
`

// Open opens the index at o.Path, or makes a new one when it is missing, damaged or of
// another format (the damaged file is removed: it held nothing that is not in the session
// files). A new index is empty until [Index.Run] has built it.
func Open(ctx context.Context, o Options) (*Index, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Debounce <= 0 {
		o.Debounce = 500 * time.Millisecond
	}
	ix := &Index{o: o, log: o.Log, dirty: map[string]time.Time{}, kick: make(chan struct{}, 1)}
	fresh, err := ix.open(ctx)
	if err != nil {
		ix.log.Warn("search index unusable; rebuilding it", "path", o.Path, "err", err)
		if ix.db != nil {
			ix.db.Close()
		}
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(o.Path + suffix)
		}
		if fresh, err = ix.open(ctx); err != nil {
			return nil, fmt.Errorf("open the search index: %w", err)
		}
	}
	ix.building = fresh
	return ix, nil
}

// open opens the database and checks it; fresh reports an index that has to be built.
func (ix *Index) open(ctx context.Context) (fresh bool, err error) {
	db, err := sql.Open("sqlite", "file:"+ix.o.Path+"?_pragma=journal_mode(wal)&_pragma=synchronous(normal)&_pragma=busy_timeout(5000)")
	if err != nil {
		return false, err
	}
	ix.db = db
	db.SetMaxOpenConns(4)
	var format string
	err = db.QueryRowContext(ctx, `select value from meta where key = 'format'`).Scan(&format)
	switch {
	case err == nil && format == strconv.Itoa(Format):
		var ok string
		if err := db.QueryRowContext(ctx, `select value from meta where key = 'complete'`).Scan(&ok); err != nil || ok != "1" {
			return true, nil // a build was cut short: it goes on where the files say
		}
		// A quick look at the table's own structure finds most damage: a truncated file.
		if _, err := db.ExecContext(ctx, `insert into docs(docs) values('integrity-check')`); err != nil {
			return false, fmt.Errorf("the index is damaged: %w", err)
		}
		return false, nil
	case err == nil:
		return false, fmt.Errorf("the index is of format %s, not %d", format, Format)
	case !errors.Is(err, sql.ErrNoRows) && !strings.Contains(err.Error(), "no such table"):
		return false, err
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return false, err
	}
	if _, err := db.ExecContext(ctx, `insert or replace into meta(key, value) values('format', ?), ('complete', '0')`, strconv.Itoa(Format)); err != nil {
		return false, err
	}
	return true, nil
}

// Close closes the index.
func (ix *Index) Close() error { return ix.db.Close() }

// Changed tells the index that session id changed: it is indexed again after the
// debounce, off the caller's path.
func (ix *Index) Changed(id string) {
	ix.mu.Lock()
	if _, ok := ix.dirty[id]; !ok {
		ix.dirty[id] = time.Now().Add(ix.o.Debounce)
	}
	ix.mu.Unlock()
	select {
	case ix.kick <- struct{}{}:
	default:
	}
}

// Progress is how far a build from the session files has come.
type Progress struct {
	Building    bool
	Done, Total int
	// Unreadable are the sessions whose files the index could not read: reported, not
	// dropped silently.
	Unreadable []string
}

// Progress returns how far the build has come.
func (ix *Index) Progress() Progress {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return Progress{Building: ix.building, Done: ix.done, Total: ix.total, Unreadable: append([]string(nil), ix.failed...)}
}

// Run brings the index up to date with the session files (every session whose file
// changed since it was indexed, all of them for a new index), then indexes the sessions
// [Index.Changed] names, until ctx ends.
func (ix *Index) Run(ctx context.Context) error {
	if err := ix.catchUp(ctx); err != nil && ctx.Err() == nil {
		ix.log.Warn("search index: catching up", "err", err)
	}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		ix.mu.Lock()
		now, next := time.Now(), time.Time{}
		var due []string
		for id, at := range ix.dirty {
			if !at.After(now) {
				due = append(due, id)
				delete(ix.dirty, id)
			} else if next.IsZero() || at.Before(next) {
				next = at
			}
		}
		ix.mu.Unlock()
		for _, id := range due {
			if err := ix.indexSession(ctx, id); err != nil && ctx.Err() == nil {
				ix.log.Warn("search index: index a session", "session_id", id, "err", err)
			}
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = time.Until(next)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ix.kick:
		case <-t.C:
		}
	}
}

// catchUp indexes every session whose file changed since it was indexed, the least
// recently changed first (so that newer messages get higher row ids), and forgets sessions
// that are gone. It lists the store's files, not its sessions' rows: a listing reads every
// file (a third of a build's time), and the index reads each one anyway.
func (ix *Index) catchUp(ctx context.Context) error {
	start := time.Now()
	files, err := ix.o.Source.Store().Files(ctx)
	if err != nil {
		return err
	}
	slices.SortFunc(files, func(a, b sessions.File) int {
		return cmp.Or(a.ModTime.Compare(b.ModTime), strings.Compare(a.ID, b.ID))
	})
	known := map[string][2]int64{}
	rows, err := ix.db.QueryContext(ctx, `select id, size, mtime from sessions`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		var size, mtime int64
		if rows.Scan(&id, &size, &mtime) == nil {
			known[id] = [2]int64{size, mtime}
		}
	}
	rows.Close()
	var todo []string
	for _, f := range files {
		k, ok := known[f.ID]
		delete(known, f.ID)
		if ok && k == [2]int64{f.Size, f.ModTime.UnixNano()} {
			continue
		}
		todo = append(todo, f.ID)
	}
	ix.mu.Lock()
	ix.total, ix.done = len(todo), 0
	if len(todo) > 0 {
		ix.building = ix.building || len(todo) > 50
	}
	ix.mu.Unlock()
	if len(todo) > 0 {
		ix.log.Info("search index: indexing sessions", "sessions", len(todo))
	}
	for id := range known {
		if err := ix.remove(ctx, id); err != nil {
			return err
		}
	}
	if err := ix.build(ctx, todo); err != nil {
		return err
	}
	if _, err := ix.db.ExecContext(ctx, `insert or replace into meta(key, value) values('complete', '1')`); err != nil {
		return err
	}
	ix.mu.Lock()
	ix.building = false
	ix.mu.Unlock()
	if len(todo) > 0 {
		ix.log.Info("search index: up to date", "sessions", len(todo), "secs", time.Since(start).Seconds())
	}
	return nil
}

// buildBatch is how many sessions a build writes in one transaction.
const buildBatch = 200

// readAhead bounds the sessions a build has read and cut into rows but not yet written.
const readAhead = 64

// build indexes the sessions of todo, in order, buildBatch of them a transaction. Workers,
// one a processor, read and cut the sessions ahead of the one writer (SQLite has one), so
// that decoding the files and writing the rows take their time side by side. A session
// that cannot be read is reported (Progress.Unreadable) and the others are written.
func (ix *Index) build(ctx context.Context, todo []string) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // before the wait: the workers return on it
	ready := make([]chan prepared, len(todo))
	for i := range ready {
		ready[i] = make(chan prepared, 1)
	}
	// A worker takes a slot before it takes the next session, and the writer frees it
	// once it has that session: the sessions are taken in order, so the one the writer
	// waits for is always being read.
	slots := make(chan struct{}, readAhead)
	var next atomic.Int64
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for {
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
				i := int(next.Add(1)) - 1
				if i >= len(todo) {
					return
				}
				ready[i] <- ix.prepare(ctx, todo[i])
			}
		})
	}
	lastLog := time.Now()
	for at := 0; at < len(todo); at += buildBatch {
		end := min(len(todo), at+buildBatch)
		if err := ix.writeBatch(ctx, ready[at:end], slots); err != nil {
			return err
		}
		ix.mu.Lock()
		ix.done = end
		ix.mu.Unlock()
		if time.Since(lastLog) > 5*time.Second {
			ix.log.Info("search index: indexing", "done", end, "of", len(todo))
			lastLog = time.Now()
		}
	}
	return nil
}

// writeBatch writes the sessions that arrive on batch, in order, in one transaction,
// freeing a slot of the read-ahead for each.
func (ix *Index) writeBatch(ctx context.Context, batch []chan prepared, slots <-chan struct{}) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	w, err := newWriter(ctx, tx)
	if err != nil {
		return err
	}
	for _, c := range batch {
		var p prepared
		select {
		case p = <-c:
			<-slots
		case <-ctx.Done():
			return ctx.Err()
		}
		if p.err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			ix.mu.Lock()
			ix.failed = append(ix.failed, p.id+": "+p.err.Error())
			ix.mu.Unlock()
			ix.log.Warn("search index: a session file it cannot read", "session_id", p.id, "err", p.err)
			continue
		}
		if err := ix.put(ctx, w, p); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// sessionPath is where session id's file is, for its size and time.
func (ix *Index) sessionPath(id string) string { return ix.o.Source.Store().Path(id) }

// remove forgets session id.
func (ix *Index) remove(ctx context.Context, id string) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := forget(ctx, tx, id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `delete from sessions where id = ?`, id); err != nil {
		return err
	}
	return tx.Commit()
}

// forget deletes session id's rows of docs, in tx.
func forget(ctx context.Context, tx *sql.Tx, id string) error {
	var first, last int64
	err := tx.QueryRowContext(ctx, `select first, last from sessions where id = ?`, id).Scan(&first, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if last >= first && first > 0 {
		_, err = tx.ExecContext(ctx, `delete from docs where rowid between ? and ?`, first, last)
	}
	return err
}

// doc is one row of the index: a piece of a message.
type doc struct {
	thread string
	idx    int
	kind   string // user, answer, tool_input, tool_output, path
	at     time.Time
	text   string
}

// indexSession reads session id and puts all of it in the index in place of what was
// there.
func (ix *Index) indexSession(ctx context.Context, id string) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	w, err := newWriter(ctx, tx)
	if err != nil {
		return err
	}
	if err := ix.write(ctx, w, id); err != nil {
		return err
	}
	return tx.Commit()
}

// writer is a transaction's prepared statements.
type writer struct {
	tx              *sql.Tx
	insDoc, insSess *sql.Stmt
}

func newWriter(ctx context.Context, tx *sql.Tx) (*writer, error) {
	w := &writer{tx: tx}
	var err error
	if w.insDoc, err = tx.PrepareContext(ctx, `insert into docs(text, session, thread, idx, kind, at) values(?,?,?,?,?,?)`); err != nil {
		return nil, err
	}
	if w.insSess, err = tx.PrepareContext(ctx, `insert or replace into sessions(id, title, project, archived, modified, size, mtime, first, last) values(?,?,?,?,?,?,?,?,?)`); err != nil {
		return nil, err
	}
	return w, nil
}

// prepared is a session read and cut into the index's rows, ready to be written.
type prepared struct {
	id          string
	sess        *sessions.Session // nil: the session is gone
	docs        []doc
	size, mtime int64 // its file's, as indexed
	err         error // it could not be read
}

// prepare reads session id and cuts it into rows. It does no database work, so that it
// can run beside the writer.
func (ix *Index) prepare(ctx context.Context, id string) prepared {
	p := prepared{id: id}
	sess, _, err := ix.o.Source.Snapshot(ctx, id)
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		return p
	case err != nil:
		p.err = err
		return p
	}
	p.sess = sess
	if st, err := os.Stat(ix.sessionPath(id)); err == nil {
		p.size, p.mtime = st.Size(), st.ModTime().UnixNano()
	}
	p.docs = docsOf(sess)
	return p
}

// write puts session id in the index in w's transaction, in place of what was there.
func (ix *Index) write(ctx context.Context, w *writer, id string) error {
	p := ix.prepare(ctx, id)
	if p.err != nil {
		return p.err
	}
	return ix.put(ctx, w, p)
}

// put writes session p (its sess nil: it is gone) in w's transaction, in place of what
// was there.
func (ix *Index) put(ctx context.Context, w *writer, p prepared) error {
	tx, id, sess := w.tx, p.id, p.sess
	if sess == nil {
		if err := forget(ctx, tx, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `delete from sessions where id = ?`, id)
		return err
	}
	if err := forget(ctx, tx, id); err != nil {
		return err
	}
	archived := 0
	if sess.Archived {
		archived = 1
	}
	var first, last int64
	for _, d := range p.docs {
		res, err := w.insDoc.ExecContext(ctx, d.text, id, d.thread, d.idx, d.kind, d.at.Unix())
		if err != nil {
			return err
		}
		last, _ = res.LastInsertId()
		if first == 0 {
			first = last
		}
	}
	_, err := w.insSess.ExecContext(ctx, id, sess.Title, ix.o.Source.Project(sess.Cwd), archived, time.Unix(0, p.mtime).Unix(), p.size, p.mtime, first, last)
	return err
}

// maxDoc bounds the text of one row: a tool's long output is kept by its head and tail.
const maxDoc = 32 << 10

// docsOf is what of session s the index holds: each thread's own messages (not those it
// starts with from its predecessor), piece by piece.
func docsOf(s *sessions.Session) []doc {
	var out []doc
	for _, t := range s.Threads {
		at := t.Created
		for i, e := range t.Entries {
			if e.AcceptedAt != nil {
				at = *e.AcceptedAt
			}
			if i < t.Base && t.Predecessor != "" {
				continue
			}
			add := func(kind, text string) {
				if strings.TrimSpace(text) == "" {
					return
				}
				if len(text) > maxDoc {
					text = strings.ToValidUTF8(text[:maxDoc/2], "") + "\n…\n" + strings.ToValidUTF8(text[len(text)-maxDoc/2:], "")
				}
				out = append(out, doc{thread: t.ID, idx: i, kind: kind, at: at, text: text})
			}
			for _, p := range e.Message.Parts {
				switch {
				case p.Kind == model.KindText && e.Message.Role == model.User:
					add("user", p.Text)
				case p.Kind == model.KindText:
					add("answer", p.Text)
				case p.Kind == model.KindToolCall && p.ToolCall != nil:
					add("tool_input", toolInputText(p.ToolCall.Input))
					if path := pathOf(p.ToolCall.Input); path != "" {
						add("path", path)
					}
				case p.Kind == model.KindToolResult && p.ToolResult != nil:
					add("tool_output", p.ToolResult.Text)
				}
			}
			if e.Partial != "" && len(e.Message.Parts) == 0 {
				add("answer", e.Partial)
			}
		}
	}
	return out
}

// toolInputText is a tool call's input as words: its string values (a command, a path, a
// file's text), not its JSON syntax.
func toolInputText(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			b.WriteString(v)
			b.WriteByte('\n')
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return b.String()
}

// pathOf is the path a tool call's input names (an editor's, an image viewer's), if any.
func pathOf(raw json.RawMessage) string {
	var in struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(raw, &in) != nil {
		return ""
	}
	return in.Path
}

// ftsQuery turns what a person typed into an FTS5 query: words and "quoted phrases",
// each taken literally (no operator or column syntax gets through), all of them required;
// the last word matches as a prefix, so that a query typed so far finds.
func ftsQuery(q string) string {
	var terms []string
	var word strings.Builder
	flush := func(prefix bool) {
		w := word.String()
		word.Reset()
		if w == "" {
			return
		}
		t := `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
		if prefix {
			t += "*"
		}
		terms = append(terms, t)
	}
	inPhrase := false
	var phrase strings.Builder
	for _, r := range q {
		switch {
		case r == '"' && !inPhrase:
			flush(false)
			inPhrase = true
		case r == '"' && inPhrase:
			inPhrase = false
			if p := strings.TrimSpace(phrase.String()); p != "" {
				terms = append(terms, `"`+strings.ReplaceAll(p, `"`, `""`)+`"`)
			}
			phrase.Reset()
		case inPhrase:
			phrase.WriteRune(r)
		case unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_':
			word.WriteRune(r)
		default:
			flush(false)
		}
	}
	if inPhrase {
		if p := strings.TrimSpace(phrase.String()); p != "" {
			terms = append(terms, `"`+strings.ReplaceAll(p, `"`, `""`)+`"`)
		}
	} else {
		flush(true)
	}
	return strings.Join(terms, " AND ")
}
