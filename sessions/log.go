package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"

	"myco.dev/agent/model"
	"myco.dev/hosts/tools"
	"myco.dev/policy"
)

// record is one line of a session log. Exactly one of the pointers is set.
type record struct {
	Kind     string       `json:"kind"`
	Session  *metaRec     `json:"session,omitempty"`
	Thread   *threadRec   `json:"thread,omitempty"`
	Message  *msgRec      `json:"message,omitempty"`
	Usage    *usageRec    `json:"usage,omitempty"`
	Intent   *intentRec   `json:"intent,omitempty"`
	Result   *resultRec   `json:"result,omitempty"`
	Turn     *turnRec     `json:"turn,omitempty"`
	Progress *progressRec `json:"progress,omitempty"`
	Partial  *partialRec  `json:"partial,omitempty"`
	Restore  *restoreRec  `json:"restore,omitempty"`
}

// metaRec carries the session's metadata: the first line of every file, and again whenever
// the metadata changes (the last one wins).
type metaRec struct {
	Version    int            `json:"version"`
	ID         string         `json:"id"`
	Created    time.Time      `json:"created"`
	Model      string         `json:"model,omitempty"`
	Title      string         `json:"title,omitempty"`
	Links      []string       `json:"links,omitempty"`
	Scratchpad string         `json:"scratchpad,omitempty"`
	Archived   bool           `json:"archived,omitempty"`
	Parent     string         `json:"parent,omitempty"`
	Hidden     bool           `json:"hidden,omitempty"`
	Cwd        string         `json:"cwd,omitempty"`
	Selected   string         `json:"selected_model,omitempty"`
	RequestID  string         `json:"request_id,omitempty"`
	RequestSum string         `json:"request_sum,omitempty"`
	Actions    []ActionRecord `json:"actions,omitempty"`
	Queue      []Queued       `json:"queue,omitempty"`
	Mode       string         `json:"mode,omitempty"`
	Rules      []policy.Rule  `json:"rules,omitempty"`
	Approvals  []Approval     `json:"approvals,omitempty"`
	MaxCost    float64        `json:"max_cost,omitempty"`
}

// threadRec starts a thread. Inherit is how many leading entries of the predecessor it
// starts with (a rewind keeps the completed turns without copying them).
type threadRec struct {
	ID          string    `json:"id"`
	Created     time.Time `json:"created"`
	Predecessor string    `json:"predecessor,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Inherit     int       `json:"inherit,omitempty"`
	Base        int       `json:"base,omitempty"`
}

// msgRec appends a message to a thread at Index. An Index below the thread's length
// rewinds the thread to Index first.
type msgRec struct {
	Thread string `json:"thread"`
	Index  int    `json:"index"`
	Entry
}

// usageRec is a usage report. A carried one (a rewound thread's, which starts from an
// earlier context) sets the thread's context use without counting as spent again.
type usageRec struct {
	Thread  string      `json:"thread"`
	Usage   model.Usage `json:"usage"`
	Carried bool        `json:"carried,omitempty"`
	// Model is the catalog key of the model whose response it reports, which prices it;
	// records written before costs were kept have none (the session's model prices them).
	Model string `json:"model,omitempty"`
}

// intentRec is written before a tool call runs.
type intentRec struct {
	Thread  string         `json:"thread"`
	Call    model.ToolCall `json:"call"`
	Host    string         `json:"host"`
	Started time.Time      `json:"started"`
}

// resultRec is written as soon as a tool call returns, before the batch's checkpoint.
type resultRec struct {
	Thread   string           `json:"thread"`
	Result   model.ToolResult `json:"result"`
	Finished time.Time        `json:"finished"`
}

// progressRec is the newest output of a running tool call, written at most every
// progressEvery while it runs, so that a call cut by a crash can show the last output seen.
type progressRec struct {
	Thread string    `json:"thread"`
	CallID string    `json:"call_id"`
	Output string    `json:"output"`
	At     time.Time `json:"at"`
}

// partialRec is what has streamed of the answer a turn is writing, saved now and then
// while it streams, so that what a person saw of it before myco stopped is not lost (see
// [Entry.Partial]).
type partialRec struct {
	Thread   string    `json:"thread"`
	Text     string    `json:"text,omitempty"`
	Thinking string    `json:"thinking,omitempty"`
	At       time.Time `json:"at"`
}

// turnRec ends a turn. Error is what a person is told of a turn that did not end with
// an answer, Code its kind (see [Kinds]) and Detail the technical chain under Error.
type turnRec struct {
	Thread string    `json:"thread"`
	Status string    `json:"status"`
	At     time.Time `json:"at"`
	Error  string    `json:"error,omitempty"`
	Code   string    `json:"code,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

// end is the turn end that rec records after entry after.
func (rec *turnRec) end(after int) TurnEnd {
	return legacyEnd(TurnEnd{After: after, Status: rec.Status, Error: rec.Error, Code: rec.Code, Detail: rec.Detail, At: rec.At})
}

// metaOf returns the metadata record of s.
func metaOf(s *Session) *metaRec {
	return &metaRec{Version: Version, ID: s.ID, Created: s.Created, Model: s.Model, Title: s.Title,
		Links: s.Links, Scratchpad: s.Scratchpad, Archived: s.Archived, Parent: s.Parent, Hidden: s.Hidden, Cwd: s.Cwd, Selected: s.Selected,
		RequestID: s.RequestID, RequestSum: s.RequestSum, Actions: s.Actions, Queue: s.Queue,
		Mode: s.Mode, Rules: s.Rules, Approvals: s.Approvals, MaxCost: s.MaxCost}
}

// setMeta sets the session's metadata from a metadata record.
func (s *Session) setMeta(m *metaRec) {
	s.ID, s.Created, s.Model, s.Title, s.Links = m.ID, m.Created, m.Model, m.Title, m.Links
	s.Scratchpad, s.Archived, s.Parent, s.Hidden, s.Selected = m.Scratchpad, m.Archived, m.Parent, m.Hidden, m.Selected
	s.RequestID, s.RequestSum, s.Actions, s.Queue, s.Cwd = m.RequestID, m.RequestSum, m.Actions, m.Queue, m.Cwd
	s.Mode, s.Rules, s.Approvals = m.Mode, m.Rules, m.Approvals
	s.MaxCost = m.MaxCost
}

// wholeRecords returns the records of a fresh version 5 log that holds sess: its metadata,
// then each thread with its messages and latest usage.
func wholeRecords(sess *Session) []record {
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
	for _, r := range sess.restores {
		recs = append(recs, record{Kind: "restore", Restore: r})
	}
	return recs
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

// Errors of session files that cannot be loaded, which a [LoadError] matches.
var (
	// ErrUnsupportedSchema reports a session file of a newer schema than this myco reads.
	ErrUnsupportedSchema = errors.New("sessions: the session file needs a newer myco")
	// ErrDamaged reports a session file that is not a valid session.
	ErrDamaged = errors.New("sessions: the session file is damaged")
)

// LoadError is a session file that cannot be read as a session. The file is left as it
// was; nothing rewrites it. It matches [ErrUnsupportedSchema] when Newer is set, else
// [ErrDamaged].
type LoadError struct {
	Path  string
	Line  int // 0 when the problem is not on one line
	Msg   string
	Newer int // the file's schema version, when it is newer than this myco reads
}

func (e *LoadError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

func (e *LoadError) Unwrap() error {
	if e.Newer > 0 {
		return ErrUnsupportedSchema
	}
	return ErrDamaged
}

// Problem says in a few words why the file cannot be used, for a listing: "needs a newer
// myco (…)" or "damaged: FILE:LINE: …".
func (e *LoadError) Problem() string {
	if e.Newer > 0 {
		return fmt.Sprintf("needs a newer myco (session schema version %d; this myco reads versions 2 to %d)", e.Newer, Version)
	}
	return "damaged: " + e.Error()
}

// newerSchemaError is a session of a schema version newer than this binary's.
type newerSchemaError struct{ version int }

func (e *newerSchemaError) Error() string {
	return fmt.Sprintf("session schema version %d is newer than this myco understands (version %d); upgrade myco", e.version, Version)
}

// loadError is the [LoadError] of err on line of path (0 for none).
func loadError(path string, line int, err error) *LoadError {
	le := &LoadError{Path: path, Line: line, Msg: err.Error()}
	if n, ok := errors.AsType[*newerSchemaError](err); ok {
		le.Newer = n.version
	}
	return le
}

// Decode parses a session file: a version 5 log, or a document of schema 2, 3 or 4, which
// is upgraded in memory ([Session.Upgraded] says from which). Tool calls that a stopped
// process left without results are recovered in memory (see docs/session-format.md). path
// is used in error messages only.
func Decode(path string, data []byte) (*Session, error) {
	sess, _, err := decode(path, data)
	return sess, err
}

// decode is [Decode] that also returns the length of data's valid records: what follows
// them is a torn last write.
func decode(path string, data []byte) (*Session, int64, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		sess, err := decodeLegacy(data)
		if err != nil {
			return nil, 0, loadError(path, 0, err)
		}
		if err := check(sess); err != nil {
			return nil, 0, &LoadError{Path: path, Msg: err.Error()}
		}
		for _, t := range sess.Threads {
			t.saved = len(t.Entries)
			t.scan()
		}
		recoverCalls(sess.Latest(), true)
		return sess, int64(len(data)), nil
	}
	var sess *Session
	lineNo := 0
	valid := 0 // bytes of whole, valid records
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
			return nil, 0, loadError(path, lineNo, err)
		}
		valid += nl + 1
		if sess == nil {
			if rec.Kind != "session" || rec.Session == nil {
				return nil, 0, &LoadError{Path: path, Line: lineNo, Msg: "first record is not a session header"}
			}
		}
		if err := apply(&sess, rec); err != nil {
			return nil, 0, loadError(path, lineNo, err)
		}
	}
	if sess == nil {
		return nil, 0, &LoadError{Path: path, Msg: "empty session file"}
	}
	if len(sess.Threads) == 0 {
		return nil, 0, &LoadError{Path: path, Msg: "session has no thread"}
	}
	for _, t := range sess.Threads {
		t.saved = len(t.Entries)
	}
	recoverCalls(sess.Latest(), false)
	recoverPartial(sess.Latest())
	return sess, int64(valid), nil
}

// check validates what every loaded session must satisfy.
func check(s *Session) error {
	if !idPattern.MatchString(s.ID) {
		return fmt.Errorf("invalid session id %q", s.ID)
	}
	if len(s.Threads) == 0 {
		return errors.New("session has no thread")
	}
	seen := map[string]bool{}
	for _, t := range s.Threads {
		if t.ID == "" || seen[t.ID] {
			return fmt.Errorf("thread id %q is empty or repeated", t.ID)
		}
		seen[t.ID] = true
	}
	return nil
}

func decodeLine(line []byte) (record, error) {
	var rec record
	if len(line) < 10 || line[8] != ' ' {
		return rec, errors.New("not a checksummed record")
	}
	// ParseUint, not fmt.Sscanf: a load reads every line, and Sscanf took an eighth of
	// its time.
	sum, err := strconv.ParseUint(string(line[:8]), 16, 32)
	if err != nil {
		return rec, errors.New("bad checksum field")
	}
	body := line[9:]
	if crc32.Checksum(body, castagnoli) != uint32(sum) {
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
			return &newerSchemaError{m.Version}
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
		s.setMeta(m)
	case "thread":
		t := rec.Thread
		if t == nil || t.ID == "" {
			return errors.New("thread record without id")
		}
		s := *sp
		if s.Thread(t.ID) != nil {
			return fmt.Errorf("thread %q declared twice", t.ID)
		}
		nt := &Thread{ID: t.ID, Created: t.Created, Predecessor: t.Predecessor, Reason: t.Reason, Base: t.Base}
		prev := s.Latest()
		if t.Inherit != 0 {
			if prev == nil || prev.ID != t.Predecessor || t.Inherit < 0 || t.Inherit > len(prev.Entries) {
				return fmt.Errorf("thread %q inherits %d entries of a thread that does not have them", t.ID, t.Inherit)
			}
			nt.Entries = append([]Entry(nil), prev.Entries[:t.Inherit]...)
			nt.scan()
		}
		if prev != nil {
			prev.Successor = t.ID
		}
		s.Threads = append(s.Threads, nt)
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
		t.noteEntry(m.Entry)
		(*sp).noteCaptures(m.Entry)
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
		if !u.Carried {
			t.addSpent(u.Model, u.Usage)
		}
	case "intent":
		in := rec.Intent
		if in == nil {
			return errors.New("intent record without intent")
		}
		t := (*sp).Thread(in.Thread)
		if t == nil {
			return fmt.Errorf("intent for unknown thread %q", in.Thread)
		}
		if t.intents == nil {
			t.intents = map[string]*intentRec{}
		}
		t.intents[in.Call.ID] = in
		t.noteCall(in.Call.ID, in.Host, in.Started, time.Time{})
	case "result":
		r := rec.Result
		if r == nil {
			return errors.New("result record without result")
		}
		t := (*sp).Thread(r.Thread)
		if t == nil {
			return fmt.Errorf("result for unknown thread %q", r.Thread)
		}
		if t.results == nil {
			t.results = map[string]*resultRec{}
		}
		t.results[r.Result.CallID] = r
		t.noteCall(r.Result.CallID, "", time.Time{}, r.Finished)
	case "progress":
		p := rec.Progress
		if p == nil {
			return errors.New("progress record without progress")
		}
		t := (*sp).Thread(p.Thread)
		if t == nil {
			return fmt.Errorf("progress for unknown thread %q", p.Thread)
		}
		if t.progress == nil {
			t.progress = map[string]*progressRec{}
		}
		t.progress[p.CallID] = p
	case "partial":
		p := rec.Partial
		if p == nil {
			return errors.New("partial record without partial")
		}
		t := (*sp).Thread(p.Thread)
		if t == nil {
			return fmt.Errorf("partial answer for unknown thread %q", p.Thread)
		}
		t.partial = p
	case "turn":
		tr := rec.Turn
		if tr == nil {
			return errors.New("turn record without turn")
		}
		t := (*sp).Thread(tr.Thread)
		if t == nil {
			return fmt.Errorf("turn end for unknown thread %q", tr.Thread)
		}
		t.open, t.end, t.partial = false, tr.Status, nil
		t.ends = append(t.ends, tr.end(len(t.Entries)))
	case "restore":
		r := rec.Restore
		if r == nil || r.ID == "" {
			return errors.New("restore record without id")
		}
		(*sp).noteRestore(r)
	default:
		// A record kind from a newer minor revision: skip it rather than refuse the file.
	}
	return nil
}

// noteEntry updates the thread's turn and tool-call bookkeeping for an appended entry.
func (t *Thread) noteEntry(e Entry) {
	if (e.AcceptedAt != nil || e.Continuation) && !e.Rejected {
		t.open = true
	}
	t.partial = nil // a saved message supersedes what streamed before it
	if e.Message.Role == model.User {
		t.intents, t.results, t.progress = nil, nil, nil
	}
}

// scan rebuilds the turn bookkeeping from the entries alone (legacy files, inherited
// entries): a turn is open when a user turn has no assistant message after it.
func (t *Thread) scan() {
	t.open = false
	for _, e := range t.Entries {
		t.noteEntry(e)
		if e.Message.Role == model.Assistant {
			t.open = false
		}
	}
}

// recoverPartial keeps, in memory, what streamed of the answer a stopped process was
// writing: an entry a person sees and the model never does ([Entry.Partial]).
func recoverPartial(t *Thread) {
	if t == nil || t.partial == nil || !t.open || (t.partial.Text == "" && t.partial.Thinking == "") {
		return
	}
	t.Entries = append(t.Entries, partialEntry(t.partial.Text, t.partial.Thinking, PartialInterrupted))
	t.partial = nil
}

// partialEntry is the entry of what streamed of an answer whose turn ended without it.
func partialEntry(text, thinking, how string) Entry {
	m := model.Message{Role: model.Assistant}
	if thinking != "" {
		m.Parts = append(m.Parts, model.Part{Kind: model.KindThinking, Thinking: &model.Thinking{Text: thinking}})
	}
	if text != "" {
		m.Parts = append(m.Parts, model.TextPart(text))
	}
	return Entry{Message: m, Partial: how}
}

// recoverCalls answers, in memory, the tool calls of a final assistant message that a
// stopped process left without results: a result recorded before the stop is used; a call
// whose intent was recorded gets an unknown outcome; a call that never started gets a
// not-run error. Older schemas recorded no intents, so there every unanswered call is
// unknown. A hidden runtime notice tells the model to inspect external state first.
func recoverCalls(t *Thread, legacy bool) {
	if t == nil || len(t.Entries) == 0 {
		return
	}
	last := t.Entries[len(t.Entries)-1].Message
	calls := last.ToolCalls()
	if last.Role != model.Assistant || len(calls) == 0 {
		return
	}
	parts := make([]model.Part, 0, len(calls)+1)
	var unknown []string
	for _, c := range calls {
		var res model.ToolResult
		switch {
		case t.results[c.ID] != nil:
			res = t.results[c.ID].Result
		case t.intents[c.ID] != nil:
			in := t.intents[c.ID]
			res = model.ToolResult{Unknown: true, Text: fmt.Sprintf(
				"outcome unknown: myco stopped while this call was running on host %s (started %s); no output was saved. It may have taken effect: inspect its effects before retrying.",
				in.Host, in.Started.UTC().Format(time.RFC3339))}
			if p := t.progress[c.ID]; p != nil {
				res.Text = fmt.Sprintf(
					"outcome unknown: myco stopped while this call was running on host %s (started %s). It may have taken effect: inspect its effects before retrying. The last output seen (saved %s; at most its newest %d bytes):\n%s",
					in.Host, in.Started.UTC().Format(time.RFC3339), p.At.UTC().Format(time.RFC3339), tools.ProgressBytes, p.Output)
			}
			unknown = append(unknown, fmt.Sprintf("%s %s on %s", c.Name, c.ID, in.Host))
		case legacy:
			res = model.ToolResult{Unknown: true, Text: "outcome unknown: the session was saved by an older myco without a result for this call. It may have taken effect: inspect its effects before retrying."}
			unknown = append(unknown, fmt.Sprintf("%s %s on %s", c.Name, c.ID, hostOf(c.Input)))
		default:
			res = model.ToolResult{IsError: true, Text: "not run: myco stopped before this call started, so nothing was executed; call it again if it is still needed"}
		}
		res.CallID = c.ID
		parts = append(parts, model.Part{Kind: model.KindToolResult, ToolResult: &res})
	}
	if len(unknown) > 0 {
		parts = append(parts, model.SystemPart("runtime", "[myco: interrupted tool batch] The process running this session stopped while tool calls were in flight: "+
			strings.Join(unknown, "; ")+". Their outcomes are unknown and they were not run again. Inspect the external state they touch (files, processes, remote hosts) before retrying any of them."))
	}
	t.Entries = append(t.Entries, Entry{Message: model.Message{Role: model.User, Parts: parts}, Recovered: true})
	t.intents, t.results, t.progress = nil, nil, nil
}
