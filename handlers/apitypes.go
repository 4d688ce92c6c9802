package handlers

import (
	"encoding/json"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/web"
)

// The requests and answers of the JSON API under /profiles/NAME/api/, one struct each:
// they are its contract (docs/browser.md), and the field names and tags are what clients
// send and read. A request with a field its struct does not have is refused, and so is one
// without a field tagged required:"true". Lists are never null: an empty one is []. An
// optional field (omitempty) is left out when it does not apply; each says when it is
// there. An enum tag lists the values a field takes.
//
// The OpenAPI document (openapi.json, served at /api/openapi.json, and docs/openapi.json)
// is generated from these structs, their comments and the routes of apiroutes.go: after a
// change here, run go test ./handlers -run TestOpenAPIDocument -update.

// ErrorAnswer is the body of every error answer, with a stable code and a sentence:
// {"error": {"code": "busy", "message": "…"}}. The codes are listed in docs/browser.md.
type ErrorAnswer = web.ErrorBody

// CreateRequest is the body of POST /api/sessions. RequestID is required: the same one
// again answers the first result and creates nothing, also across a restart.
type CreateRequest struct {
	RequestID     string `json:"request_id" required:"true"`
	ParentSession string `json:"parent_session"` // makes the session a hidden child of this one
	Fork          bool   `json:"fork"`           // the child starts from the parent's conversation (needs parent_session)
	// Model is a catalog key (GET /api/models lists them); empty means the parent's model
	// for a fork, else the catalog's default.
	Model string `json:"model"`
	Title string `json:"title"`
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

// ListAnswer answers GET /api/sessions: the sessions, newest first, a page of at most
// ?limit= of them.
type ListAnswer struct {
	Sessions []ListedSession `json:"sessions"`
	// NextCursor is there when more sessions follow: ?cursor= it reads the next page.
	NextCursor string `json:"next_cursor,omitempty"`
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
	Job   string `json:"job,omitempty" enum:"turn,compact"`
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
	LastTurn  string            `json:"last_turn" enum:"none,running,done,stopped,failed,rejected,interrupted"`
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

// LastError is why a turn ended without an answer: a stable code (see docs/browser.md),
// what happened and what to do in plain words (the words the page and the terminal show),
// and the technical detail.
type LastError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Detail is the technical chain under the message: the status and what the model
	// endpoint said, bounded. Left out when there is none.
	Detail string `json:"detail,omitempty"`
	// Retryable says whether sending the turn again as it is (the retry action) can help;
	// false when something has to be fixed first (a credential, the config, the message).
	Retryable bool `json:"retryable"`
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
	Status string          `json:"status" enum:"running,ok,error,unknown"`
	Output string          `json:"output,omitempty"` // its head and tail, 16 KiB at most
}

// ChildSession is one child of a [SnapshotAnswer]'s session.
type ChildSession struct {
	SessionID string `json:"session_id"`
	Title     string `json:"title"`
	Model     string `json:"model"`
	Busy      bool   `json:"busy"`
	LastTurn  string `json:"last_turn" enum:"none,running,done,stopped,failed,rejected,interrupted"` // as the snapshot's last_turn
}

// TreeTotals rolls up a session and all its descendants.
type TreeTotals struct {
	Sessions      int         `json:"sessions"`
	Busy          int         `json:"busy"`
	OpenToolCalls int         `json:"open_tool_calls"`
	Spent         model.Usage `json:"spent"`
	WorkSecs      float64     `json:"work_secs"`
}

// The body of POST /api/sessions/ID/actions is one action, idempotent by its request_id:
// its action field says which, and each action takes its own fields and no other.

// SubmitAction sends a message: text, attachments, or both. The answer ([SubmitAnswer])
// comes once the message is durable; with wait, once its turn has ended (or timeout_secs
// passed).
type SubmitAction struct {
	RequestID string `json:"request_id" required:"true"`
	Action    string `json:"action" required:"true" enum:"submit"`
	// Text is the message. An @path in it attaches that file, as the browser's composer
	// does; one that names no file, or cannot be attached, goes as text, with a warning in
	// the answer.
	Text string `json:"text"`
	// Attachments are files sent with the message, held to the browser's caps: at most 20;
	// an image (png, jpeg, gif, webp) within the model's max_image_base64_bytes, or UTF-8
	// text within 256 KiB.
	Attachments []Attachment `json:"attachments"`
	// Wait makes the answer wait for the turn's end, at most TimeoutSecs (1 to 3600; 600
	// when left out).
	Wait        bool `json:"wait"`
	TimeoutSecs int  `json:"timeout_secs"`
}

// Attachment is a file sent with a message.
type Attachment struct {
	Name string `json:"name" required:"true"` // the file's name, as the model is told it
	Data string `json:"data" required:"true"` // its bytes, in standard base64
}

// SelectModelAction makes a catalog model the session's model from its next turn on.
type SelectModelAction struct {
	RequestID string `json:"request_id" required:"true"`
	Action    string `json:"action" required:"true" enum:"select_model"`
	Model     string `json:"model" required:"true"` // a catalog key (GET /api/models)
}

// SetTitleAction renames the session.
type SetTitleAction struct {
	RequestID string `json:"request_id" required:"true"`
	Action    string `json:"action" required:"true" enum:"set_title"`
	Title     string `json:"title" required:"true"`
}

// CompactAction starts a compaction of the session's active thread into a successor; its
// end shows in the events and the snapshot (busy false, a new active_thread).
type CompactAction struct {
	RequestID string `json:"request_id" required:"true"`
	Action    string `json:"action" required:"true" enum:"compact"`
}

// RetryAction sends the session's last turn again, when it failed, was stopped, was cut off
// by a crash or was rejected: a stopped or failed turn goes on from its saved history (the
// model is told the earlier attempt broke off), a rejected message is sent again as it was.
// Started like compact: its end shows in the events and the snapshot. A session whose last
// turn answered is not_retryable (409).
type RetryAction struct {
	RequestID string `json:"request_id" required:"true"`
	Action    string `json:"action" required:"true" enum:"retry"`
}

// ArchiveAction archives the session (archive) or brings it back (restore): archiving
// changes listings only.
type ArchiveAction struct {
	RequestID string `json:"request_id" required:"true"`
	Action    string `json:"action" required:"true" enum:"archive,restore"`
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
	// Warnings say what of the message went otherwise than asked: an @path that names no
	// file, or one that cannot be attached, went as text.
	Warnings []string `json:"warnings"`
	// Ended is there with wait: true when the turn ended within timeout_secs, false when it
	// still runs (send the same request again to wait on). For an ended turn, LastTurn,
	// LastError and Answer say how it ended, as the snapshot does; they are left out when a
	// later turn has been accepted since (a repeat): read the messages then.
	Ended     *bool      `json:"ended,omitempty"`
	LastTurn  string     `json:"last_turn,omitempty" enum:"running,done,stopped,failed,rejected,interrupted"`
	LastError *LastError `json:"last_error,omitempty"`
	Answer    *string    `json:"answer,omitempty"`
}

// ActionAnswer answers POST /api/sessions/ID/actions with every action but submit:
// select_model, compact, archive, restore, set_title.
type ActionAnswer struct {
	SessionID string    `json:"session_id"`
	RequestID string    `json:"request_id"`
	Action    string    `json:"action" enum:"select_model,compact,retry,archive,restore,set_title"`
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
	// TimeoutSecs bounds the wait for the job's end (0 to 600; 10 when left out).
	TimeoutSecs int `json:"timeout_secs"`
}

// CancelAnswer answers POST /api/sessions/ID/cancel once the job has ended: Stopped is
// false when nothing ran (or the named job had ended). When the job has not ended within
// timeout_secs, Stopping is true: it ends soon, and the events after EventID show its end
// (a cancelled event, then state with busy false).
type CancelAnswer struct {
	SessionID string `json:"session_id"`
	Stopped   bool   `json:"stopped"`
	Stopping  bool   `json:"stopping"`
	JobID     string `json:"job_id,omitempty"` // the job that was stopped
	EventID   string `json:"event_id"`         // the cursor from just before the cancel
	APIURL    string `json:"api_url"`
}

// ModelsAnswer answers GET /api/models: the catalog, in its order.
type ModelsAnswer struct {
	Models  []ModelEntry `json:"models"`
	Default string       `json:"default"` // the key of new sessions' model
}

// ModelEntry is one model of a [ModelsAnswer].
type ModelEntry struct {
	Key                 string `json:"key"`
	Protocol            string `json:"protocol" enum:"anthropic-messages,openai-responses,openai-completions"`
	ContextWindow       int    `json:"context_window"`         // tokens; 0 when the catalog does not say
	MaxImageBase64Bytes int    `json:"max_image_base64_bytes"` // the largest image attachment, as base64
	Default             bool   `json:"default"`
}

// VersionAnswer answers GET /api/version.
type VersionAnswer struct {
	Myco  string `json:"myco"`  // the release version
	Build string `json:"build"` // the build: version, module, revision, build identity
	// API is the version of this API, also in every answer's Myco-API-Version header: it
	// changes only with a breaking change, which comes under a new path.
	API string `json:"api"`
	// HostProtocol is the version of the protocol myco speaks with its remote hosts.
	HostProtocol int `json:"host_protocol"`
}

// The events of GET /api/events are [myco.dev/sessions.Update], the one JSON encoding of the
// session service's events (myco -p --json prints the same), and these of the stream's
// own.

// PingEvent comes on /api/events when nothing else did for a while.
type PingEvent struct {
	Type string    `json:"type" enum:"ping"`
	Time time.Time `json:"time"`
}
