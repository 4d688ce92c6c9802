package api

import "time"

// The actions of POST /api/sessions/ID/actions, by their action field.
const (
	ActionSubmit      = "submit"
	ActionSelectModel = "select_model"
	ActionSetTitle    = "set_title"
	ActionCompact     = "compact"
	ActionRetry       = "retry"
	ActionArchive     = "archive"
	ActionRestore     = "restore"
	ActionUndoTurn    = "undo_turn"
	ActionRedoTurn    = "redo_turn"
	ActionRevertFile  = "revert_file"
	ActionApprove     = "approve"
	ActionDeny        = "deny"
	ActionSetMode     = "set_mode"
)

// Action is the body of POST /api/sessions/ID/actions: one action, idempotent by its
// request_id, whose action field says which ([SubmitAction], [SelectModelAction],
// [SetTitleAction], [CompactAction], [RetryAction], [ArchiveAction], [RestoreAction],
// [UndoTurnAction], [RedoTurnAction], [RevertFileAction], [ApproveAction], [DenyAction],
// [SetModeAction]).
// Each action takes its own fields and no other: a field another action takes is refused
// (unknown_field), one it needs and lacks is missing_field.
type Action interface {
	// Name is the action's name, the value of its action field.
	Name() string
}

// actions are the actions, in the order the document lists them, each with a new zero
// value of its body.
var actions = []struct {
	name string
	new  func() Action
}{
	{ActionSubmit, func() Action { return &SubmitAction{Action: ActionSubmit} }},
	{ActionSelectModel, func() Action { return &SelectModelAction{Action: ActionSelectModel} }},
	{ActionSetTitle, func() Action { return &SetTitleAction{Action: ActionSetTitle} }},
	{ActionCompact, func() Action { return &CompactAction{Action: ActionCompact} }},
	{ActionRetry, func() Action { return &RetryAction{Action: ActionRetry} }},
	{ActionArchive, func() Action { return &ArchiveAction{Action: ActionArchive} }},
	{ActionRestore, func() Action { return &RestoreAction{Action: ActionRestore} }},
	{ActionUndoTurn, func() Action { return &UndoTurnAction{Action: ActionUndoTurn} }},
	{ActionRedoTurn, func() Action { return &RedoTurnAction{Action: ActionRedoTurn} }},
	{ActionRevertFile, func() Action { return &RevertFileAction{Action: ActionRevertFile} }},
	{ActionApprove, func() Action { return &ApproveAction{Action: ActionApprove} }},
	{ActionDeny, func() Action { return &DenyAction{Action: ActionDeny} }},
	{ActionSetMode, func() Action { return &SetModeAction{Action: ActionSetMode} }},
}

// ActionNames returns the names of the actions.
func ActionNames() []string {
	out := make([]string, len(actions))
	for i, a := range actions {
		out[i] = a.name
	}
	return out
}

// NewAction returns a pointer to a new action named name, its action field set, to decode
// a body into; false for a name that is no action.
func NewAction(name string) (Action, bool) {
	for _, a := range actions {
		if a.name == name {
			return a.new(), true
		}
	}
	return nil, false
}

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
	// MaxCost, when set, is first made the budget of the session's tree (its root's
	// max_cost): the retry of a turn that stopped at its budget (budget_reached). 0 takes
	// the tree's own budget away.
	MaxCost *float64 `json:"max_cost,omitempty"`
}

// ArchiveAction archives the session: archiving changes listings only.
type ArchiveAction struct {
	RequestID string `json:"request_id" required:"true"`
	Action    string `json:"action" required:"true" enum:"archive"`
}

// RestoreAction brings an archived session back.
type RestoreAction struct {
	RequestID string `json:"request_id" required:"true"`
	Action    string `json:"action" required:"true" enum:"restore"`
}

// UndoTurnAction puts every file a turn changed back as it was before the turn: a
// modified file gets its old content, a created one is removed, a deleted one comes back,
// with its executable bit; symlinks as symlinks. A file changed since the turn ended (by
// a person, a later turn, another session) is a conflict: nothing is written, and the 409
// conflict answer names the files; send the action again with them in overwrite to
// overwrite them. A session that runs a turn is busy (stop it first). The model is told,
// at its next turn, which files changed outside its tool calls.
type UndoTurnAction struct {
	RequestID string `json:"request_id" required:"true"`
	Action    string `json:"action" required:"true" enum:"undo_turn"`
	// Thread and Turn name the turn: its thread (the active one when left out) and its
	// input's entry in it (the index of the accepted event and the snapshot's messages).
	Thread string `json:"thread"`
	Turn   *int   `json:"turn" required:"true"`
	// Overwrite names the conflicting files to overwrite all the same.
	Overwrite []string `json:"overwrite"`
}

// RedoTurnAction puts an undone turn's changes back, as undo_turn took them away, with
// the same conflicts.
type RedoTurnAction struct {
	RequestID string   `json:"request_id" required:"true"`
	Action    string   `json:"action" required:"true" enum:"redo_turn"`
	Thread    string   `json:"thread"`
	Turn      *int     `json:"turn" required:"true"`
	Overwrite []string `json:"overwrite"`
}

// RevertFileAction puts one file back as it was before a turn (thread and turn set), or
// before the session's first captured turn (turn left out). A file changed since that
// turn ended is a conflict unless overwrite is true.
type RevertFileAction struct {
	RequestID string `json:"request_id" required:"true"`
	Action    string `json:"action" required:"true" enum:"revert_file"`
	// Path is the file, as the changes name it (relative to the directory captured).
	Path   string `json:"path" required:"true"`
	Host   string `json:"host"` // the host of the change; local when left out
	Thread string `json:"thread"`
	Turn   *int   `json:"turn"`
	// Overwrite puts the file back even when it changed since.
	Overwrite bool `json:"overwrite"`
}

func (SubmitAction) Name() string      { return ActionSubmit }
func (SelectModelAction) Name() string { return ActionSelectModel }
func (SetTitleAction) Name() string    { return ActionSetTitle }
func (CompactAction) Name() string     { return ActionCompact }
func (RetryAction) Name() string       { return ActionRetry }
func (ArchiveAction) Name() string     { return ActionArchive }
func (RestoreAction) Name() string     { return ActionRestore }
func (UndoTurnAction) Name() string    { return ActionUndoTurn }
func (RedoTurnAction) Name() string    { return ActionRedoTurn }
func (RevertFileAction) Name() string  { return ActionRevertFile }

// SubmitAnswer answers a [SubmitAction]: the input is durable. Repeat says that an earlier
// request with the same request_id submitted it, and this is its acceptance again.
type SubmitAnswer struct {
	SessionID  string    `json:"session_id"`
	RequestID  string    `json:"request_id"`
	Action     string    `json:"action" enum:"submit"`
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

// ActionAnswer answers every action but submit: select_model, set_title, compact, retry,
// archive, restore, undo_turn, redo_turn, revert_file, approve, deny and set_mode.
type ActionAnswer struct {
	SessionID string    `json:"session_id"`
	RequestID string    `json:"request_id"`
	Action    string    `json:"action" enum:"select_model,set_title,compact,retry,archive,restore,undo_turn,redo_turn,revert_file,approve,deny,set_mode"`
	At        time.Time `json:"at"`
	Repeat    bool      `json:"repeat"`
	// Result is what the action left, when it says: the model, the title, "started", the
	// number of files an undo put back, the mode, or the approval's status (allowed, denied).
	Result string `json:"result,omitempty"`
	// Restored are the files an undo, redo or revert put back; LeftAlone those it could
	// not (over the size cap, a directory not empty), with why.
	Restored  []string    `json:"restored,omitempty"`
	LeftAlone []LeftAlone `json:"left_alone,omitempty"`
}

// LeftAlone is a file an undo, redo or revert did not put back, and why: changed (since
// the turn; a 409 lists these), not_stored (over the size cap), untracked (ignored on one
// side), not_empty (a directory that still holds files), blocked (the way to it is a
// symlink or .git), failed.
type LeftAlone struct {
	Path   string `json:"path"`
	Host   string `json:"host,omitempty"`
	Reason string `json:"reason" enum:"changed,not_stored,untracked,not_empty,blocked,failed"`
	Detail string `json:"detail,omitempty"`
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
