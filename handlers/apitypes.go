package handlers

import (
	"encoding/json"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/web"
)

// The requests and answers of the JSON API under /profiles/NAME/api/, one struct each:
// they are its contract (docs/browser.md), and the field names and tags are what clients
// send and read. A request with a field its struct does not have is refused. Lists are
// never null: an empty one is []. An optional field (omitempty) is left out when it does
// not apply; each says when it is there.

// ErrorAnswer is the body of every error answer, with a stable code and a sentence:
// {"error": {"code": "busy", "message": "…"}}. The codes are listed in docs/browser.md.
type ErrorAnswer = web.ErrorBody

// CreateRequest is the body of POST /api/sessions. RequestID is required: the same one
// again answers the first result and creates nothing, also across a restart.
type CreateRequest struct {
	RequestID     string `json:"request_id"`
	ParentSession string `json:"parent_session"` // makes the session a hidden child of this one
	Fork          bool   `json:"fork"`           // the child starts from the parent's conversation
	Model         string `json:"model"`          // a catalog key; empty means the default
	Title         string `json:"title"`
	// Cwd is the session's directory: an absolute path of an existing directory on the
	// server's machine. Empty means the parent's for a child, else the server's own.
	Cwd string `json:"cwd"`
}

// CreateAnswer answers POST /api/sessions: 201 Created when the request created the
// session, 200 when an earlier request with the same request_id did (Created is false).
type CreateAnswer struct {
	SessionID string `json:"session_id"`
	RequestID string `json:"request_id"`
	Created   bool   `json:"created"`
	URL       string `json:"url"`     // the session's page
	APIURL    string `json:"api_url"` // its snapshot
	// ParentSession is there for a child (parent_session was set).
	ParentSession string `json:"parent_session,omitempty"`
}

// ListAnswer answers GET /api/sessions: the sessions, newest first.
type ListAnswer struct {
	Sessions []ListedSession `json:"sessions"`
}

// ListedSession is one row of a [ListAnswer].
type ListedSession struct {
	SessionID     string    `json:"session_id"`
	Title         string    `json:"title"`
	Model         string    `json:"model"`
	Created       time.Time `json:"created"`
	Modified      time.Time `json:"modified"`
	Busy          bool      `json:"busy"`
	Archived      bool      `json:"archived"`
	Hidden        bool      `json:"hidden"`
	Cwd           string    `json:"cwd,omitempty"`            // its directory; left out for a session that cannot be opened
	ParentSession string    `json:"parent_session,omitempty"` // a child's parent
	// Problem is there for a session this myco cannot open: "needs a newer myco (…)" or
	// "damaged: FILE:LINE: …". Opening it answers unsupported_schema or damaged.
	Problem string `json:"problem,omitempty"`
}

// SnapshotAnswer answers GET /api/sessions/ID: the session's state, its active thread's
// newest messages, and event_id, the cursor of the events the snapshot may not show yet.
type SnapshotAnswer struct {
	SessionID string    `json:"session_id"`
	Title     string    `json:"title"`
	Created   time.Time `json:"created"`
	Model     string    `json:"model"`
	// Cwd is the session's directory: where its local bash starts and relative paths
	// resolve.
	Cwd string `json:"cwd"`
	// Busy is false once all accepted work has ended.
	Busy bool `json:"busy"`
	// Job is the running job, "turn" or "compact", and JobID its id (for a cancel), when
	// Busy.
	Job   string `json:"job,omitempty"`
	JobID string `json:"job_id,omitempty"`
	// BusyElsewhere names another process that works on the session, if one does.
	BusyElsewhere string `json:"busy_elsewhere,omitempty"`
	// Stopped is the save error that stopped the session's work, if one did.
	Stopped      string `json:"stopped,omitempty"`
	ActiveThread string `json:"active_thread"`
	// LastTurn is how the latest turn stands: none (no turn yet), running, done, stopped,
	// failed, rejected (the request was refused and the turn rewound), or interrupted (the
	// process running it stopped). LastError says why for stopped, failed, rejected and
	// interrupted.
	LastTurn  string            `json:"last_turn"`
	LastError *LastError        `json:"last_error,omitempty"`
	Archived  bool              `json:"archived"`
	Hidden    bool              `json:"hidden"`
	Usage     SnapshotUsage     `json:"usage"`
	Messages  []SnapshotMessage `json:"messages"`
	// NextBefore is there when older messages are left: ?before= it pages back.
	NextBefore int `json:"next_before,omitempty"`
	// Answer is the latest turn's final answer, empty when it has none (it failed, was
	// stopped before answering, or still runs): never an earlier turn's.
	Answer  string `json:"answer"`
	EventID string `json:"event_id"`
	// ParentSession is there for a child; RootSession and Depth (0 for a root) for every
	// session whose lineage could be read.
	ParentSession string         `json:"parent_session,omitempty"`
	RootSession   string         `json:"root_session,omitempty"`
	Depth         *int           `json:"depth,omitempty"`
	Children      []ChildSession `json:"children"`
	Tree          TreeTotals     `json:"tree"`
}

// LastError is why a turn ended without an answer: a stable code (see docs/browser.md) and
// a sentence that says what happened and what to do.
type LastError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// SnapshotUsage is the context use of a [SnapshotAnswer]'s active thread and the tokens
// the session cost.
type SnapshotUsage struct {
	User          string      `json:"user"` // "USER 1300/100000": prompt tokens of the context window
	PromptTokens  int         `json:"prompt_tokens"`
	ContextWindow int         `json:"context_window"`
	Spent         model.Usage `json:"spent"`
}

// SnapshotMessage is one message of a [SnapshotAnswer]: its text, its images' count, and
// its tool calls with their outcomes. Hidden system parts are left out, and so is a
// message of tool results only (they show in their calls).
type SnapshotMessage struct {
	Index      int                `json:"index"`
	Role       string             `json:"role"`
	AcceptedAt *time.Time         `json:"accepted_at,omitempty"` // a user input's acceptance
	Text       string             `json:"text,omitempty"`
	ToolCalls  []SnapshotToolCall `json:"tool_calls,omitempty"`
	Images     int                `json:"images,omitempty"`
	// Rejected marks a user message whose request was rejected: it is shown where it was
	// sent, but the model never got it (the next message does not carry it).
	Rejected bool `json:"rejected,omitempty"`
}

// SnapshotToolCall is one tool call of a [SnapshotMessage].
type SnapshotToolCall struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Input  json.RawMessage `json:"input"`
	Status string          `json:"status"`           // running, ok, error, unknown
	Output string          `json:"output,omitempty"` // its head and tail, 16 KiB at most
}

// ChildSession is one child of a [SnapshotAnswer]'s session.
type ChildSession struct {
	SessionID string `json:"session_id"`
	Title     string `json:"title"`
	Model     string `json:"model"`
	Busy      bool   `json:"busy"`
	LastTurn  string `json:"last_turn"` // as the snapshot's last_turn
}

// TreeTotals rolls up a session and all its descendants.
type TreeTotals struct {
	Sessions      int         `json:"sessions"`
	Busy          int         `json:"busy"`
	OpenToolCalls int         `json:"open_tool_calls"`
	Spent         model.Usage `json:"spent"`
	WorkSecs      float64     `json:"work_secs"`
}

// ActionRequest is the body of POST /api/sessions/ID/actions: one action, idempotent by
// RequestID. Action is submit (with Text), select_model (with Model), compact, archive,
// restore or set_title (with Title).
type ActionRequest struct {
	RequestID string `json:"request_id"`
	Action    string `json:"action"`
	Text      string `json:"text"`
	Model     string `json:"model"`
	Title     string `json:"title"`
}

// SubmitAnswer answers POST /api/sessions/ID/actions with action submit: the input is
// durable. Repeat says that an earlier request with the same request_id submitted it, and
// this is its acceptance again.
type SubmitAnswer struct {
	SessionID  string    `json:"session_id"`
	RequestID  string    `json:"request_id"`
	Action     string    `json:"action"` // "submit"
	AcceptedAt time.Time `json:"accepted_at"`
	Thread     string    `json:"thread"`
	Repeat     bool      `json:"repeat"`
	// EventID is the cursor from just before the submission, for /api/events?after=; a
	// repeat has none (its turn began before).
	EventID string `json:"event_id,omitempty"`
	// JobID is the turn's job, for a cancel that stops this turn and no later one; a repeat
	// of a turn that has ended has none.
	JobID string `json:"job_id,omitempty"`
}

// ActionAnswer answers POST /api/sessions/ID/actions with every action but submit:
// select_model, compact, archive, restore, set_title.
type ActionAnswer struct {
	SessionID string    `json:"session_id"`
	RequestID string    `json:"request_id"`
	Action    string    `json:"action"`
	At        time.Time `json:"at"`
	Repeat    bool      `json:"repeat"`
	// Result is what the action left, when it says: the model, the title, "started".
	Result string `json:"result,omitempty"`
}

// CancelRequest is the optional body of POST /api/sessions/ID/cancel. JobID names the job
// to stop (a submit's answer, the snapshot and the state events give it): when that job has
// ended, the cancel does nothing, so that it cannot stop a later turn. Without it, the cancel
// stops whatever runs.
type CancelRequest struct {
	RequestID string `json:"request_id"`
	JobID     string `json:"job_id"`
}

// CancelAnswer answers POST /api/sessions/ID/cancel. Stopped is false when nothing ran.
type CancelAnswer struct {
	SessionID string `json:"session_id"`
	Stopped   bool   `json:"stopped"`
	APIURL    string `json:"api_url"`
}

// The events of GET /api/events are [myco.dev/sessions.Update], the one JSON encoding of the
// session service's events (myco -p --json prints the same), and these of the stream's
// own.

// PingEvent comes on /api/events when nothing else did for a while.
type PingEvent struct {
	Type string    `json:"type"` // "ping"
	Time time.Time `json:"time"`
}
