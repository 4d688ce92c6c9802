package views

import "strconv"

// The ids of the elements that a session page's stream and htmx requests swap. The
// templates give the elements these ids and the handlers aim partials at them, both
// through these names: a renamed target changes both sides, instead of leaving a handler
// swapping into nothing (htmx skips a partial whose target is missing, silently).
const (
	IDTranscript   = "transcript"    // the transcript: a reset re-renders its content
	IDEarlier      = "earlier"       // the "load earlier" button, replaced by older messages
	IDMessages     = "messages"      // the saved messages; a new one is appended
	IDLive         = "live"          // the live region: what streams until it is saved
	IDLiveText     = "live-text"     // the streamed text of the response
	IDLiveMarkdown = "live-md"       // its settled Markdown, rendered: parts are appended
	IDLiveTail     = "live-tail"     // its open end, as text: replaced or extended
	IDLiveCode     = "live-code"     // the code of the open code block the open end begins
	IDLiveThinking = "live-thinking" // the streamed thinking of the response
	IDLiveNotes    = "live-notes"    // notes: notices, host states, errors
	IDStatus       = "status"        // the status bar's slot
	IDSessionHead  = "session-head"  // the title, threads, children and archive action
	IDTitle        = "title"         // the session's title in its heading
	IDComposerSlot = "composer-slot" // where a submit's fresh composer goes
	IDQueue        = "queue"         // the messages that wait for the running turn to end
	IDApprovals    = "approvals"     // the tool calls that wait for the person's answer, and the mode
	IDToast        = "toast"         // the alert area of an htmx request's error
	IDPageTitle    = "page-title"    // the document's title, which follows a session's
	IDSessionList  = "session-list"  // the sessions page's list, swapped by the search
	IDProject      = "project-mcp"   // the MCP servers the session's project offers
)

// SidebarID is the id of session id's item in a session page's sidebar.
func SidebarID(session string) string { return "side-" + session }

// RowID is the id of session id's row on the sessions page.
func RowID(session string) string { return "row-" + session }

// MessageID is the id of entry i of a thread.
func MessageID(thread string, i int) string { return "m-" + thread + "-" + strconv.Itoa(i) }

// EndID is the id of the note of the k-th turn end of a thread.
func EndID(thread string, k int) string { return "end-" + thread + "-" + strconv.Itoa(k) }

// ToolID is the id of the card of tool call call. A call id is the provider's, so anything
// but letters, digits, '-' and '_' becomes '_' (the id is also a CSS selector).
func ToolID(call string) string {
	b := []byte(call)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return "tool-" + string(b)
}

// ToolOutputID is the id of the output of tool call call's card, where its progress goes.
func ToolOutputID(call string) string { return ToolID(call) + "-out" }

// target is the hx-target selector of the element with id.
func target(id string) string { return "#" + id }

// Swap is how a partial puts its content at its target: htmx's hx-swap values.
type Swap string

const (
	SwapInner  Swap = "innerHTML" // replace the target's content
	SwapOuter  Swap = "outerHTML" // replace the target
	SwapAppend Swap = "beforeend" // append to the target's content
	SwapDelete Swap = "delete"    // remove the target
)

// The names of a session page's stream events. Every update is an unnamed event (SSE's
// "message"), whose data is the partials that htmx swaps; a ping only says the stream is
// alive (static/app.js and the events worker listen for it).
const (
	EventUpdate = ""
	EventPing   = "ping"
)

// The states stream of a profile (its base URL and StatesPath): an EventState event each
// time one of its sessions' states changes, whose data is a [StateChange] in JSON, and a
// ping when nothing happens. The pages' notifications follow it (static/app.js), each page
// through the browser's events worker.
const (
	StatesPath = "/states/events"
	EventState = "state"
)

// StateChange is a session's new state, as the states stream tells it.
type StateChange struct {
	Session string `json:"session"`
	URL     string `json:"url"` // its page
	Title   string `json:"title"`
	State   string `json:"state"` // working, needs_you, done or failed
	// Why says why it is in its state, in a sentence: a notification's body.
	Why string `json:"why,omitempty"`
	// Child marks a session another one started (a hidden one): "notify me for all
	// sessions" leaves it out, since its failures go to its parent and its pending
	// approvals make its root need you, which tells them.
	Child    bool `json:"child,omitempty"`
	Approval bool `json:"approval,omitempty"` // a tool call of it, or of a session below it, waits for approval
}
