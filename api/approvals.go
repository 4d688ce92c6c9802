package api

import (
	"encoding/json"
	"time"
)

// Approval is a tool call waiting for the person's answer, part of the session's document
// from before it is announced until it is answered: listed in the snapshot
// (pending_approvals) and on the tree's root (GET /api/sessions/ID/approvals), announced
// by an approval_requested event and answered by an approve or deny action.
type Approval struct {
	// ID is the approval's id: its tool call's.
	ID     string          `json:"id"`
	Thread string          `json:"thread"`
	Tool   string          `json:"tool"`
	Input  json.RawMessage `json:"input" type:"object"`
	Host   string          `json:"host,omitempty"`
	// Command is a bash call's command line; Paths an editor call's files.
	Command string   `json:"command,omitempty"`
	Paths   []string `json:"paths,omitempty"`
	// OutsideSandbox: the model asked to run the command outside the sandbox, saying why
	// in Justification.
	OutsideSandbox bool   `json:"outside_sandbox,omitempty"`
	Justification  string `json:"justification,omitempty"`
	// Reason says why the call asks; Rule is the rule that "allow always for this session"
	// adds, in its text form (bash(go test *), edit(src/main.go), …); empty when none fits.
	Reason    string    `json:"reason"`
	Rule      string    `json:"rule,omitempty"`
	Mode      string    `json:"mode" enum:"read-only,ask,workspace,full"`
	Requested time.Time `json:"requested"`
	// Status is pending until answered: allowed, denied, or cancelled (the turn was stopped
	// while it waited).
	Status string `json:"status" enum:"pending,allowed,denied,cancelled"`
	// Always: the answer added Rule to the session's rules. Answer is the reason a deny
	// gave the model.
	Always   bool      `json:"always,omitempty"`
	Answer   string    `json:"answer,omitempty"`
	Resolved time.Time `json:"resolved,omitzero"`
}

// TreeApproval is a pending approval of a session of a tree.
type TreeApproval struct {
	Session string `json:"session"`
	Approval
}

// ApprovalsAnswer answers GET /api/sessions/ID/approvals: the pending approvals of the
// session and of every session below it in its tree, oldest first by session.
type ApprovalsAnswer struct {
	Approvals []TreeApproval `json:"approvals"`
}

// ApprovalRequestedEvent says that a tool call waits for the person's answer. The
// approval is durable in the session before this is sent; a stream that missed it finds
// it in the snapshot's pending_approvals.
type ApprovalRequestedEvent struct {
	EventInfo
	ApprovalEventCall
}

// ApprovalResolvedEvent says that an approval was answered (or cancelled), with its
// status.
type ApprovalResolvedEvent struct {
	EventInfo
	ApprovalEventCall
}

// ApprovalEventCall is the call an approval event is about, and the approval.
type ApprovalEventCall struct {
	// ChildSession, on the stream of a session above the one that asked in its tree, names
	// that session: a child's approval shows on its parent and its root, and is answered on
	// the child.
	ChildSession string          `json:"child_session,omitempty"`
	Thread       string          `json:"thread,omitempty"`
	CallID       string          `json:"call_id"`
	Tool         string          `json:"tool"`
	Input        json.RawMessage `json:"input,omitempty" type:"object"`
	Host         string          `json:"host,omitempty"`
	Approval     Approval        `json:"approval"`
}

// ApproveAction allows a pending approval's call to run; with always, the approval's rule
// is added to the session's rules too. Only the person may send it: the request must
// carry the approval capability (see docs/security.md), which tool processes never get.
type ApproveAction struct {
	RequestID string `json:"request_id" required:"true"`
	Action    string `json:"action" required:"true" enum:"approve"`
	Approval  string `json:"approval" required:"true"` // the approval's id
	Always    bool   `json:"always"`
}

// DenyAction refuses a pending approval's call; the model is told, with reason when
// given. Like approve, only the person may send it.
type DenyAction struct {
	RequestID string `json:"request_id" required:"true"`
	Action    string `json:"action" required:"true" enum:"deny"`
	Approval  string `json:"approval" required:"true"`
	Reason    string `json:"reason"`
}

// SetModeAction changes the session's approval mode from its next tool call on.
type SetModeAction struct {
	RequestID string `json:"request_id" required:"true"`
	Action    string `json:"action" required:"true" enum:"set_mode"`
	Mode      string `json:"mode" required:"true" enum:"read-only,ask,workspace,full"`
}

func (ApproveAction) Name() string { return ActionApprove }
func (DenyAction) Name() string    { return ActionDeny }
func (SetModeAction) Name() string { return ActionSetMode }
