package views

import "github.com/a-h/templ"

// Chrome is what every page shows around its content: the profile, the asset URLs and the
// navigation.
type Chrome struct {
	Title   string // the page's title, before " · myco"
	Profile string
	Base    string // the profile's URL prefix, "/profiles/NAME"
	CSS     []string
	JS      []string
	// MissingAssets names vendored assets that are not built in: the page says to run
	// make assets (live updates need htmx).
	MissingAssets []string
	Nav           string // which navigation item is current: "sessions", "workspace"
	// ThemeJS is the script that sets the chosen theme before the page paints (loaded
	// without defer, so a dark page never flashes light).
	ThemeJS string
	// Profiles are the server's profiles, for the switcher (shown when there are several).
	Profiles []string
	// EventsWorker is the URL of the SharedWorker that holds the browser's one event
	// connection; "" means each page streams on its own.
	EventsWorker string
	// Warning is shown on every page of the profile: its config is invalid, say.
	Warning string
	// Cwd is the directory the header's New session offers first: the session's on a
	// session page; "" means the server's.
	Cwd string
	// Main is the id of the page's main content, where the skip link goes; "" means "main".
	Main string
}

// SessionsView is the sessions page.
type SessionsView struct {
	Chrome
	Filter  string // "active", "archived" or "all"
	Query   string
	Rows    []SessionRow
	Models  []string
	Model   string // the default model for a new session
	Message string // a notice to show above the list, e.g. after an action
	// Cwd is the directory the list is filtered by ("" for all), and Dirs the directories
	// to filter by: those of the sessions, newest first.
	Cwd  string
	Dirs []DirChoice
	// SnapshotSpace says how much space the snapshots of the sessions' files take ("12
	// MB"); "" when they are not captured.
	SnapshotSpace string
	// View is how the rows are grouped: "project" (by the git root of their directory,
	// else the directory) or "date" (Today, Yesterday, This week, Older). Project is the
	// one project shown whole, when the list is filtered by it.
	View    string
	Project string
	Groups  []SessionGroup
	// PrevURL and NextURL are the pages around this one; "" for none.
	PrevURL, NextURL string
	// Hits are the messages that match the query (the content search), and SearchNote
	// what to know of them (the index is being built).
	Hits       []SearchHit
	SearchNote string
}

// SwitcherView is the quick switcher's results for Query.
type SwitcherView struct {
	Query    string
	Sessions []SessionRow
	Hits     []SearchHit
	Note     string
}

// SearchHit is a content match on a page: the session, what kind of message, and the
// snippet cut into pieces, the matches marked.
type SearchHit struct {
	Title, URL, Kind, When string
	Pieces                 []SnippetPiece
}

// SnippetPiece is a piece of a snippet: a match or the text between.
type SnippetPiece struct {
	Text  string
	Match bool
}

// SessionGroup is one group of the sessions page: a project's sessions (the most recent
// first, folded beyond a few: More of them are at MoreURL), or a day's.
type SessionGroup struct {
	Title   string // the project's directory as it reads, or the day
	Path    string // the project's directory; "" for a day
	Count   int    // its sessions, folded ones included
	Rows    []SessionRow
	More    int
	MoreURL string
}

// DirChoice is a directory offered: its absolute path and how it reads (~ for home).
type DirChoice struct {
	Path, Label string
	Current     bool // the one chosen now
	Note        string
}

// NewSessionView is the page that starts a session with its first message: which
// directory (typed, with completion, or one used lately) and which model.
type NewSessionView struct {
	Chrome
	Action      string // where the form posts
	CompleteURL string // the completion of a typed directory (option elements)
	Cwd         string // the directory typed or offered
	CwdError    string // why the directory was refused, shown at the field
	Recent      []DirChoice
	Models      []ModelChoice
	Model       string
	Text        string // the message, kept when it was refused
	Error       string // why the message was refused
	Notice      string // a note for the person: the commands, say
}

// ModelChoice is a model offered: its key and how it reads (with its context window).
type ModelChoice struct {
	Key, Label string
}

// SessionRow is one session in a listing.
type SessionRow struct {
	ID       string
	URL      string
	Title    string
	Model    string
	Activity string // last activity, human-readable
	ISOTime  string
	Busy     bool
	Archived bool
	Current  bool // the session the page shows
	Children int
	// State is what the session wants of you: working, needs_you, done or failed (a CSS
	// class too); empty for a session that cannot be opened.
	State   string
	Cost    string // what it cost, as humanize.Cost says it
	Turns   int    // its turns that ended
	Preview string // the first line of its last answer
	// WaitingURL, when set, is a session of its tree below it whose tool call waits for
	// the person's approval (which is why this one needs you).
	WaitingURL string
	// GroupStart, in the sidebar, is the heading of the part this row begins.
	GroupStart string
	// Cwd is the session's directory as it reads (~ for home), CwdPath the path, and
	// CwdURL the listing of the sessions in it; "" when unknown.
	Cwd, CwdPath, CwdURL string
}

// SessionView is a session page: the active thread (or an earlier one, read-only).
type SessionView struct {
	Chrome
	ID       string
	URL      string // the session's URL
	Title    string
	Archived bool
	Parent   *Link // the parent session of a child
	// Cwd is the session's directory as it reads (~ for home), CwdPath its path, and
	// FilesURL the read-only viewer of its files.
	Cwd, CwdPath, FilesURL string
	// Cost is what the session's model responses cost, as humanize.Cost says it ("cost
	// unknown" for a model without prices); empty before this page knows it.
	Cost string

	Thread   string // the thread shown
	ReadOnly bool   // an earlier thread
	Threads  []ThreadLink
	Earlier  int    // older messages not rendered
	EarlyURL string // where the "load earlier" button fetches them

	Messages  []MessageView
	Status    StatusView
	Composer  ComposerView
	Queue     QueueView
	Approvals ApprovalsView
	Sidebar   []SessionRow
	Tree      *TreeView // the roll-up of the session's children, when it has any

	EventsURL string // the event stream, with ?after= the page's cursor; "" for none
	Live      LiveView

	// Project is what the session's directory offers in its .mcp.json; nil when nothing.
	Project *ProjectView
}

// ProjectView is the MCP servers that a session's directory offers in its project file,
// which myco starts only once the person approved them.
type ProjectView struct {
	File string // the file's path
	// State is "offered" (not approved), "changed" (since approved), "approved", or
	// "unusable" (Problem says why).
	State   string
	Problem string
	Servers []ProjectServerView
	// ApproveURL and Sum make the approve form: Sum is the digest of the content shown,
	// which is what is approved. ApproveURL is "" when nothing can be approved.
	ApproveURL, Sum string
}

// ProjectServerView is one server of a project's file, as the file writes it.
type ProjectServerView struct {
	Label  string // project:NAME
	Kind   string // "stdio" (Target is the command line) or "http" (Target is the URL)
	Target string
	// Env ("K=V") and Headers ("K: V") as the file writes them, ${VAR} kept; Vars are the
	// variables of the user's environment they read.
	Env, Headers, Vars []string
	Problem            string // why myco does not start it
	State              string // once approved: started, failed and why, or waiting
}

// LiveView is the live region: the response streaming now, up to the page's cursor (its
// settled Markdown rendered, the open end as text or as the code block or table it
// begins), and notes.
type LiveView struct {
	Empty    bool // a session without messages yet: a hint, gone with the first one
	Settled  MarkdownHTML
	Open     LiveOpen // the open end, as the page shows it
	Thinking string
}

// TreeView is the roll-up of a session and its descendants.
type TreeView struct {
	Sessions, Busy, OpenCalls int
	Tokens                    string
	Cost                      string // the whole tree's, as humanize.Cost says it
	Work                      string
	Rows                      []TreeRow
}

// TreeRow is one descendant in the roll-up.
type TreeRow struct {
	Title, URL, Model, State string
	Cost                     string // the descendant's own and its descendants'
	Depth                    int
	Indent                   string // the depth as a CSS class: d1, d2, …
	// Changes is where the files the child changed show; nil when they are not captured.
	Changes *TurnChangesView
}

// Link is a titled URL.
type Link struct {
	Title, URL, Note string
}

// ThreadLink is one thread of a session in the thread list.
type ThreadLink struct {
	ID, URL, Label string
	Current        bool // the thread shown
	Active         bool // the session's latest thread
	Summary        templ.Component
}

// StatusView is the status bar of a session page: what runs, the model, the context meter,
// the hosts.
type StatusView struct {
	ID        string // the session's id, for the actions
	StopURL   string
	Busy      bool
	Job       string
	JobID     string // the running job, which Stop names: a late Stop never stops the next turn
	Elsewhere string // another process works on the session
	Stopped   string // a save failed: the session's work is stopped
	Model     string
	Used      int // prompt tokens of the last response
	Window    int // the model's context window
	// State is the session's state (working, needs_you, done, failed): the page's tab title
	// follows it.
	State string
	Cost  string // what the session cost so far, as humanize.Cost says it; empty hides it
	// CompactURL, when set, offers Compact beside the meter: the context is past the point
	// where it is worth compacting (the model's auto_compact_at, else 80%).
	CompactURL string
	Hosts      []HostView
}

// HostView is a remote host's state.
type HostView struct {
	Name, State, Error string
}

// ComposerView is the message form.
type ComposerView struct {
	Notice string // a note on what was sent (an @path that names no file)
	Action string // the form's POST URL
	// CompleteURL lists the files that complete an @path being typed (JSON); "" offers none.
	CompleteURL string
	ModelURL    string // where a model change is posted
	Models      []string
	Model       string
	Text        string // kept after a refused submit
	Error       string // why the last submit was refused
	Disabled    bool   // an earlier thread, or an archived session: read-only
}

// QueueView is the messages sent while the session was busy, waiting for their turn: each
// can be edited or withdrawn until it starts.
type QueueView struct {
	Items []QueuedView
	// RunURL starts the first of them when nothing runs (the server restarted while they
	// waited); "" while a turn runs, which starts them itself.
	RunURL string
}

// QueuedView is one waiting message.
type QueuedView struct {
	ID        string
	Text      string
	Files     int // attachments
	EditURL   string
	DeleteURL string
}

// MessageView is one message of a transcript.
type MessageView struct {
	DOMID   string // MessageID or EndID
	Role    string // "user", "assistant", "summary", "end"
	Time    string
	ISO     string
	Blocks  []Block
	CopyURL string // where Copy fetches the message's text as written; "" for no Copy
	// EditURL is where an edit of a user's message posts (its text as EditText): the
	// session goes on from there; "" for a message that cannot be edited.
	EditURL  string
	EditText string
	// Changes, on the input of a turn, is where the turn's changes to the files show;
	// nil for none.
	Changes *TurnChangesView
	// RetryURL is where Retry posts, on the end note of a turn that failed or was stopped
	// and can be sent again; "" for none. RetryHint is what to do, shown with the button
	// (and gone with it once Retry is clicked, or when the turn is no longer the last).
	RetryURL  string
	RetryHint string
	// RetryBudget asks for a new budget with Retry: the turn stopped at its budget.
	RetryBudget bool
}

// Block is one piece of a message, in order. Exactly one of its fields is set.
type Block struct {
	Markdown templ.Component // rendered, sanitized text
	Plain    string          // text shown as written (a user's message): its line breaks kept
	Attached *AttachedView   // a file the user attached, as a chip
	Thinking templ.Component // the model's thinking, its Markdown rendered (a reasoning summary's **headings**)
	Tool     *ToolView
	Image    *ImageView
	Note     string // a turn end, an error, a notice
	NoteKind string // "error", "cancelled", "notice", "partial"
	Detail   string // the technical detail of a Note, folded
}

// ToolView is one tool call with its result.
type ToolView struct {
	CallID  string // the call's id; its card's element id is ToolID(CallID)
	Name    string
	Host    string
	Summary string // one line: the command, the path
	Command string // a bash command, shown as a command
	Input   string // the input, pretty JSON (or what was written to a bash session)
	Status  string // "running", "waiting" (for the person's approval), "ok", "error", "unknown"
	// StatusText says how the call ended where the status alone does not: "exit 1",
	// "killed", "timed out". Empty shows the status's own words.
	StatusText string
	Duration   string
	Output     string // shown output: head and tail when long
	Cut        bool   // Output is shortened; FullURL loads the rest
	FullURL    string
	Diff       *DiffView
	Images     []ImageView
	Links      []Link // sessions the call created (a child's page)
}

// AttachedView is a file attached to a user's message: a chip with its name and size
// that opens on its text, or a thumbnail.
type AttachedView struct {
	Name  string
	Size  string // "1.2 KB"
	Text  string // a text file's content; "" for an image
	Image *ImageView
}

// ImageView is an image of a message or a tool result.
type ImageView struct {
	URL, Alt string
}

// DiffView is an edit as a unified diff.
type DiffView struct {
	Path          string
	Added, Gone   int
	Lines         []DiffLine
	Cut           bool // more lines than are shown
	OnlyAdditions bool
}

// DiffLine is one line of a diff: Op is ' ', '+' or '-'.
type DiffLine struct {
	Op   byte
	Text string
}

// WorkspaceView is a page of the workspace viewer: a directory listing, a text file (a
// page of it), an image, or a download.
type WorkspaceView struct {
	Chrome
	Path   string // relative to the workspace, "" for its root
	Crumbs []Link
	Dir    []WorkspaceItem
	More   bool // the listing was cut

	Kind    string // "dir", "text", "image", "download"
	Text    string
	Code    MarkdownHTML // Text highlighted, when its language is known
	Page    int
	Pages   int
	PrevURL string
	NextURL string
	RawURL  string
	Size    string
	// Back leads back to the session whose directory this is; nil in the workspace.
	Back *Link
}

// WorkspaceItem is one entry of a directory listing.
type WorkspaceItem struct {
	Name, URL, Size, Modified string
	IsDir                     bool
}

// DocumentView is a rendered workspace Markdown document, served on its own under a
// sandboxing content policy.
type DocumentView struct {
	Title   string
	CSS     []string
	Path    string
	Crumbs  []Link
	Body    templ.Component
	RawURL  string
	BackURL string
}

// ErrorView is an error page.
type ErrorView struct {
	Chrome
	Code    int
	Message string
}

// ApprovalsView is the session's approval mode and the tool calls that wait for the
// person's answer, each as a card.
type ApprovalsView struct {
	Mode     string   // read-only, ask, workspace or full
	ModeText string   // what the mode lets a call do, in a sentence
	Modes    []string // the modes to choose from
	ModeURL  string   // where a mode change is posted
	Sandbox  string   // what the sandbox can do on this machine
	// Approver: this browser holds the approval capability; without it the cards say how
	// to get it, and the buttons are not offered.
	Approver bool
	Items    []ApprovalView
}

// ApprovalView is one pending approval: the call (a command as a command, an edit as its
// file and diff), why it asks, and the answers.
type ApprovalView struct {
	ID            string // the card's element id is ApprovalID(ID): the call's id (a child's: its session's id, "-", the call's)
	Tool          string
	Host          string
	Command       string // a bash call's command line
	Paths         []string
	Diff          *DiffView // an edit's
	Input         string    // any other call's input, pretty JSON
	Escalate      bool      // the model asks to run outside the sandbox
	Justification string
	Reason        string
	Rule          string // what "Allow always" adds; "" offers no such button
	URL           string // where the answer is posted
	Session       string // a child's title, when the card is shown on its root
	SessionURL    string // and its page
}
