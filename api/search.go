package api

import "time"

// SearchAnswer answers GET /api/search: the messages that match, newest first, a page at a
// time.
type SearchAnswer struct {
	Hits []SearchHit `json:"hits"`
	// NextCursor is there when more hits follow: ?cursor= reads the next page.
	NextCursor string `json:"next_cursor,omitempty"`
	// Incomplete says that the index is being built from the session files: what it has
	// not read yet is missing from the hits. Indexed and Total say how far it has come.
	Incomplete bool `json:"incomplete"`
	Indexed    int  `json:"indexed,omitempty"`
	Total      int  `json:"total,omitempty"`
	// Unreadable names the session files the index could not read, with why.
	Unreadable []string `json:"unreadable,omitempty"`
}

// SearchHit is one matching message: where it is, a snippet of it, and where to open it.
type SearchHit struct {
	SessionID string    `json:"session_id"`
	Title     string    `json:"title"`
	Thread    string    `json:"thread"`
	Index     int       `json:"index"` // the message's index in its thread (a snapshot message's index)
	Kind      string    `json:"kind" enum:"user,answer,tool_input,tool_output,path"`
	At        time.Time `json:"at"` // when its turn began
	// Snippet is the matching part of the message, as plain text; Highlights are the
	// matches in it, as [start, end) offsets in Unicode code points.
	Snippet    string      `json:"snippet"`
	Highlights []Highlight `json:"highlights"`
	URL        string      `json:"url"` // the session's page at the message
}

// Highlight is one match in a [SearchHit]'s snippet.
type Highlight struct {
	Start int `json:"start"`
	End   int `json:"end"`
}
