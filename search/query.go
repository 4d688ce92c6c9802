package search

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Query is a search: words and "quoted phrases", all of them required (the last word
// also as a prefix), with filters.
type Query struct {
	Text     string
	Project  string    // only sessions of this project; "" for all
	From, To time.Time // only messages of this span (To exclusive); zero for open
	Archived bool      // archived sessions too
	Limit    int       // at most this many hits; 0 means 20
	Before   int64     // the cursor: only hits older than this one (a Hit's Cursor)
}

// Hit is one message that matches: where it is, and a snippet of it with the matches
// marked.
type Hit struct {
	Session, Title, Thread string
	Index                  int    // the message's index in its thread
	Kind                   string // user, answer, tool_input, tool_output or path
	At                     time.Time
	Snippet                string   // plain text
	Marks                  [][2]int // the matches in Snippet, as [start, end) rune offsets
	Cursor                 int64
}

// Result is a page of hits, newest first.
type Result struct {
	Hits []Hit
	// Next is the cursor of the page after this one (Query.Before), 0 when there is none.
	Next int64
	// Incomplete reports that the index is being built: what is not indexed yet is
	// missing from the hits.
	Incomplete bool
	Progress   Progress
}

// The snippet's marks, which no session text holds.
const (
	markStart = "\x02"
	markEnd   = "\x03"
)

// Search answers q from what the index holds now.
func (ix *Index) Search(ctx context.Context, q Query) (Result, error) {
	var res Result
	res.Progress = ix.Progress()
	res.Incomplete = res.Progress.Building
	match := ftsQuery(q.Text)
	if match == "" {
		return res, nil
	}
	if q.Limit <= 0 {
		q.Limit = 20
	}
	var where []string
	args := []any{match}
	if q.Project != "" {
		where = append(where, "s.project = ?")
		args = append(args, q.Project)
	}
	if !q.Archived {
		where = append(where, "s.archived = 0")
	}
	if !q.From.IsZero() {
		where = append(where, "docs.at >= ?")
		args = append(args, q.From.Unix())
	}
	if !q.To.IsZero() {
		where = append(where, "docs.at < ?")
		args = append(args, q.To.Unix())
	}
	if q.Before > 0 {
		where = append(where, "docs.rowid < ?")
		args = append(args, q.Before)
	}
	cond := ""
	if len(where) > 0 {
		cond = " and " + strings.Join(where, " and ")
	}
	args = append(args, q.Limit+1)
	// Newest first, by row id (a session indexed again gets new ids, so what changed last
	// comes first): FTS5 walks its index backwards and stops at the limit, where ordering
	// by rank would score every match.
	rows, err := ix.db.QueryContext(ctx, `select docs.rowid, docs.session, s.title, docs.thread, docs.idx, docs.kind, docs.at,
		snippet(docs, 0, '`+markStart+`', '`+markEnd+`', '…', 16)
		from docs join sessions s on s.id = docs.session
		where docs match ?`+cond+` order by docs.rowid desc limit ?`, args...)
	if err != nil {
		return res, fmt.Errorf("search: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h Hit
		var at int64
		var snip string
		if err := rows.Scan(&h.Cursor, &h.Session, &h.Title, &h.Thread, &h.Index, &h.Kind, &at, &snip); err != nil {
			return res, fmt.Errorf("search: %w", err)
		}
		h.At = time.Unix(at, 0).UTC()
		h.Snippet, h.Marks = marks(snip)
		res.Hits = append(res.Hits, h)
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("search: %w", err)
	}
	if len(res.Hits) > q.Limit {
		res.Hits = res.Hits[:q.Limit]
		res.Next = res.Hits[len(res.Hits)-1].Cursor
	}
	return res, nil
}

// marks takes the marks out of a snippet: its plain text, and where they were, in runes.
func marks(s string) (string, [][2]int) {
	var b strings.Builder
	var out [][2]int
	n, start := 0, -1
	for _, r := range s {
		switch string(r) {
		case markStart:
			start = n
		case markEnd:
			if start >= 0 {
				out = append(out, [2]int{start, n})
			}
			start = -1
		default:
			if r == '\n' || r == '\r' || r == '\t' {
				r = ' '
			}
			b.WriteRune(r)
			n++
		}
	}
	return b.String(), out
}
