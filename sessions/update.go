package sessions

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/api"
)

// Update types: the events of the session service, as every front end sees them; the
// names are the API's (package api), whose event types say the fields each carries.
const (
	UpdateSession       = api.EventSession       // a front end announces the session it works on
	UpdateAccepted      = api.EventAccepted      // a user turn's input is durable as entry Index of Thread: Text, AcceptedAt
	UpdateTextDelta     = api.EventTextDelta     // assistant text as it streams (deltas may be coalesced)
	UpdateThinkingDelta = api.EventThinkingDelta // reasoning text as it streams
	UpdateToolStarted   = api.EventToolStarted   // Tool, CallID, Input, Host
	UpdateToolProgress  = api.EventToolProgress  // the newest output of a running call: CallID, Text
	UpdateToolFinished  = api.EventToolFinished  // Tool, CallID, Text, IsError, Unknown, Stopped, Images, Duration
	UpdateStep          = api.EventStep          // one model response ended: Stop, Usage
	UpdateNotice        = api.EventNotice        // something to show that is not conversation, e.g. a retry
	UpdateResumed       = api.EventResumed       // the run continues past a response cut off at the token limit
	UpdateCompacted     = api.EventCompacted     // From, To, Auto
	UpdateRewound       = api.EventRewound       // From, To, Error
	UpdateSaveFailed    = api.EventSaveFailed    // a save failed: the session's work is stopped (Error)
	UpdateDone          = api.EventDone          // a turn ended with an answer: Text, Stop, Usage, Steps
	UpdateError         = api.EventError         // a turn or compaction failed: Code, Error (what happened and what to do), Detail
	UpdateCancelled     = api.EventCancelled     // a turn or compaction was stopped: Code, Error says why
	UpdateState         = api.EventState         // Busy, Job and JobID: work started or ended
	UpdateMeta          = api.EventMeta          // the metadata changed: Title, Archived, Model
	UpdateHost          = api.EventHost          // a remote host's state changed (profile-wide): Host, State, Error, Attaches
	UpdateReset         = api.EventReset         // the subscriber missed events it can no longer get: reload the snapshot
	UpdateCheckpoint    = api.EventCheckpoint    // entries Index..Count-1 of Thread are durable
	UpdateCreated       = api.EventCreated       // the session was created: Title, Model, Parent (a child's parent)
	UpdateChildCreated  = api.EventChildCreated  // a child of the session was created: Child, Model
	UpdateChanges       = api.EventChanges       // a tool batch, or an undo, changed files: Thread, Index (the turn), Host, Files, Cut, Text
	// A tool call waits for the person's answer (durable in the session before this is
	// sent): Approval, CallID, Tool, Input; and its answer: Approval with its status.
	UpdateApprovalRequested = api.EventApprovalRequested
	UpdateApprovalResolved  = api.EventApprovalResolved
)

// Update is one event of the session service: the one JSON encoding that `myco -p --json`
// prints and the server's event streams carry. Session is empty for profile-wide events
// (host state). Seq orders every event of one [Manager]: it grows by one per event across
// all its sessions, so one cursor serves a stream of one session or of many.
type Update struct {
	Type    string    `json:"type"`
	Session string    `json:"session,omitempty"`
	Seq     uint64    `json:"seq,omitempty"`
	Time    time.Time `json:"time,omitzero"`
	Thread  string    `json:"thread,omitempty"`

	Text       string            `json:"text,omitempty"`
	Tool       string            `json:"tool,omitempty"`
	CallID     string            `json:"call_id,omitempty"`
	Input      json.RawMessage   `json:"input,omitempty"`
	Host       string            `json:"host,omitempty"`
	IsError    bool              `json:"is_error,omitempty"`
	Unknown    bool              `json:"unknown,omitempty"`
	Stopped    bool              `json:"stopped,omitempty"` // a call stopped while it ran (Unknown too)
	Images     int               `json:"images,omitempty"`
	Duration   float64           `json:"duration_secs,omitempty"` // a call's; a job's, on its end (done, error, cancelled)
	ExitCode   *int              `json:"exit_code,omitempty"`     // a bash command's exit status, when it exited
	Stop       string            `json:"stop,omitempty"`
	Usage      *model.Usage      `json:"usage,omitempty"`
	Cost       *api.Cost         `json:"cost,omitempty"` // a step's or a turn's
	Steps      int               `json:"steps,omitempty"`
	CapReached bool              `json:"cap_reached,omitempty"`
	Error      string            `json:"error,omitempty"`
	Code       string            `json:"code,omitempty"`   // an error's or a stop's kind: the codes of last_error
	Detail     string            `json:"detail,omitempty"` // an error's technical chain: the status, what the endpoint said
	From       string            `json:"from,omitempty"`
	To         string            `json:"to,omitempty"`
	Auto       bool              `json:"auto,omitempty"`
	AcceptedAt *time.Time        `json:"accepted_at,omitempty"`
	Index      int               `json:"index,omitempty"`
	Count      int               `json:"count,omitempty"`
	Busy       *bool             `json:"busy,omitempty"`
	Job        string            `json:"job,omitempty"`
	JobID      string            `json:"job_id,omitempty"`
	Title      *string           `json:"title,omitempty"`
	Archived   *bool             `json:"archived,omitempty"`
	Model      string            `json:"model,omitempty"`
	State      string            `json:"state,omitempty"`
	Attaches   int               `json:"attaches,omitempty"`
	Parent     string            `json:"parent_session,omitempty"`
	Child      string            `json:"child_session,omitempty"`
	Approval   *Approval         `json:"approval,omitempty"` // approval_requested, approval_resolved
	Files      []api.ChangedFile `json:"files,omitempty"`
	Cut        bool              `json:"cut,omitempty"`

	// enc is the update's JSON, made once for every subscriber that sends it ([Update.JSON]):
	// set when it is published, shared by the copies subscribers get.
	enc *encoding
}

// encoding is an update's JSON, made on first use.
type encoding struct {
	once sync.Once
	b    []byte
}

// JSON returns u encoded, as json.Marshal does but for <, > and &, which stay as they are
// (a command's "a && b" reads so in every client): once per published update, however
// many subscribers send it.
func (u Update) JSON() ([]byte, error) {
	if u.enc == nil {
		return marshal(u)
	}
	var err error
	u.enc.once.Do(func() {
		cp := u
		cp.enc = nil
		u.enc.b, err = marshal(cp)
	})
	if err != nil {
		return nil, err
	}
	return u.enc.b, nil
}

// marshal is json.Marshal without HTML escaping, and without the newline an Encoder ends
// with.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Terminal reports whether u ends a job: a turn's answer, failure or stop.
func (u Update) Terminal() bool {
	switch u.Type {
	case UpdateDone, UpdateError, UpdateCancelled:
		return true
	}
	return false
}

// delta reports whether u is a streamed delta, which may be coalesced with its neighbours.
func (u Update) delta() bool { return u.Type == UpdateTextDelta || u.Type == UpdateThinkingDelta }

// updateOf translates a runner event into an update, or reports false for events that
// front ends do not see.
func updateOf(ev event) (Update, bool) {
	switch ev := ev.(type) {
	case agentEvent:
		return agentUpdate(ev.Event)
	case compacted:
		return Update{Type: UpdateCompacted, From: ev.From, To: ev.To, Auto: ev.Auto}, true
	case rewound:
		u := Update{Type: UpdateRewound, From: ev.From, To: ev.To}
		if ev.Err != nil {
			u.Error = ev.Err.Error()
		}
		return u, true
	case saveFailed:
		return Update{Type: UpdateSaveFailed, Error: ev.Err.Error()}, true
	case notice:
		return Update{Type: UpdateNotice, Text: ev.Text}, true
	case toolProgress:
		return Update{Type: UpdateToolProgress, Thread: ev.Thread, CallID: ev.CallID, Text: ev.Output}, true
	case accepted:
		at := ev.At
		return Update{Type: UpdateAccepted, Thread: ev.Thread, Text: ev.Text, AcceptedAt: &at, Index: ev.Index, Count: ev.Index + 1}, true
	case checkpointed:
		return Update{Type: UpdateCheckpoint, Thread: ev.Thread, Index: ev.First, Count: ev.Messages}, true
	case changesEv:
		return Update{Type: UpdateChanges, Thread: ev.Thread, Index: ev.Turn, Host: ev.Host, Files: ev.Files, Cut: ev.Cut, Text: ev.Text}, true
	case approvalEvent:
		a := ev.Approval
		u := Update{Type: UpdateApprovalRequested, Thread: a.Thread, CallID: a.ID, Tool: a.Tool, Input: a.Input, Host: a.Host, Approval: &a}
		if a.Status != ApprovalPending {
			u.Type = UpdateApprovalResolved
		}
		return u, true
	}
	return Update{}, false
}

func agentUpdate(ev agent.Event) (Update, bool) {
	switch ev := ev.(type) {
	case agent.TextDelta:
		return Update{Type: UpdateTextDelta, Text: ev.Text}, true
	case agent.ThinkingDelta:
		return Update{Type: UpdateThinkingDelta, Text: ev.Text}, true
	case agent.Notice:
		return Update{Type: UpdateNotice, Text: ev.Text}, true
	case agent.ToolStarted:
		return Update{Type: UpdateToolStarted, Tool: ev.Call.Name, CallID: ev.Call.ID, Input: ev.Call.Input, Host: hostOf(ev.Call.Input)}, true
	case agent.ToolFinished:
		r := ev.Result
		u := Update{Type: UpdateToolFinished, Tool: ev.Call.Name, CallID: ev.Call.ID, Input: ev.Call.Input, Host: hostOf(ev.Call.Input),
			Text: r.Text, IsError: r.IsError, Unknown: r.Unknown, Stopped: r.Stopped, Images: len(r.Images), Duration: ev.Duration.Seconds()}
		if code, ok := BashExitCode(ev.Call.Name, r); ok {
			u.ExitCode = &code
		}
		return u, true
	case agent.StepDone:
		u := ev.Usage
		return Update{Type: UpdateStep, Stop: string(ev.Stop), Usage: &u}, true
	case agent.Resumed:
		return Update{Type: UpdateResumed, Text: ev.Reason}, true
	}
	return Update{}, false
}
