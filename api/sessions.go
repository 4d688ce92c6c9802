package api

import (
	"encoding/json"
	"time"
)

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
	// MaxCost is the budget of the session's tree (it and every descendant), in the money
	// of the catalog's prices: when what the tree cost reaches it, a running turn stops
	// before its next model request (last_error.code budget_reached) and no child can be
	// created under it. 0 or absent means the config's max_cost for a root, and none of
	// its own for a child (its ancestors' budgets hold it).
	MaxCost float64 `json:"max_cost,omitempty"`
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
	// State is what the session wants of you, as the snapshot's state; left out for a
	// session that cannot be opened.
	State string `json:"state,omitempty" enum:"working,needs_you,done,failed"`
	// Project is the git root of the session's directory, else the directory: the list
	// groups by it.
	Project string `json:"project,omitempty"`
	Cost    *Cost  `json:"cost,omitempty"`    // what its own model responses cost
	Turns   int    `json:"turns"`             // its turns that ended
	Preview string `json:"preview,omitempty"` // the first line of its last answer, bounded
	// Problem is there for a session this myco cannot open: "needs a newer myco (…)" or
	// "damaged: FILE:LINE: …". Opening it answers unsupported_schema or damaged.
	Problem string `json:"problem,omitempty"`
}

// SnapshotAnswer answers GET /api/sessions/ID: the session's state, its active thread's
// newest messages, and EventID, the cursor of the events the snapshot may not show yet.
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
	LastTurn  string     `json:"last_turn" enum:"none,running,done,stopped,failed,rejected,interrupted"`
	LastError *LastError `json:"last_error,omitempty"`
	// State is what the session wants of you: working (a turn or a compaction runs, here
	// or elsewhere), needs_you (a tool call waits for approval, the last turn was stopped,
	// cut off or failed in a way Retry can mend, or a queued message waits behind a
	// stop), done (the last turn answered, or none ran yet) or failed (the last turn
	// failed in a way something has to be fixed first, or a save failed).
	State    string        `json:"state" enum:"working,needs_you,done,failed"`
	Archived bool          `json:"archived"`
	Hidden   bool          `json:"hidden"`
	Usage    SnapshotUsage `json:"usage"`
	// Cost is what the session's own model responses cost (Tree.Cost adds its
	// descendants').
	Cost     Cost              `json:"cost"`
	Messages []SnapshotMessage `json:"messages"`
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
	// Mode is the session's approval mode; Sandbox says what the sandbox can do on this
	// machine ("no sandbox: …" where it cannot fence commands).
	Mode    string `json:"mode" enum:"read-only,ask,workspace,full"`
	Sandbox string `json:"sandbox"`
	// PendingApprovals are the session's tool calls waiting for the person's answer.
	PendingApprovals []Approval `json:"pending_approvals"`
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
	User          string `json:"user"` // "USER 1300/100000": prompt tokens of the context window
	PromptTokens  int    `json:"prompt_tokens"`
	ContextWindow int    `json:"context_window"`
	Spent         Usage  `json:"spent"`
}

// Usage counts the tokens of model requests: a step's, a turn's, a session's or a tree's.
type Usage struct {
	Input      int `json:"input"`                 // prompt tokens, cached or not
	Output     int `json:"output"`                // generated tokens
	CacheRead  int `json:"cache_read,omitempty"`  // of the prompt tokens, those read from the provider's cache
	CacheWrite int `json:"cache_write,omitempty"` // of the prompt tokens, those written to it
	Reasoning  int `json:"reasoning,omitempty"`   // reasoning tokens, where the provider counts them
}

// Cost is money spent: a step's, a turn's, a session's or a tree's, from the tokens the
// provider reported and the catalog's prices per million tokens (in the catalog's
// currency). Known is false when some of the tokens came from a model without prices in
// the catalog: the cost is unknown (Amount then counts only the priced tokens), never 0.
type Cost struct {
	Amount float64 `json:"amount"`
	Known  bool    `json:"known"`
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
	Cost      Cost   `json:"cost"`                                                                   // the child's and its descendants'
	State     string `json:"state" enum:"working,needs_you,done,failed"`                             // as the snapshot's state
	// Changes are the files the child changed over its whole session, on every host, as GET
	// …/sessions/CHILD/changes counts them: with ?changes=true only, and left out for a
	// child whose files are not captured.
	Changes *ChangesCount `json:"changes,omitempty"`
}

// ChangesCount counts changed files and their lines.
type ChangesCount struct {
	Files   int `json:"files"`
	Added   int `json:"added"`
	Deleted int `json:"deleted"`
}

// TreeTotals rolls up a session and all its descendants.
type TreeTotals struct {
	Sessions      int     `json:"sessions"`
	Busy          int     `json:"busy"`
	OpenToolCalls int     `json:"open_tool_calls"`
	Spent         Usage   `json:"spent"`
	Cost          Cost    `json:"cost"`
	WorkSecs      float64 `json:"work_secs"`
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
