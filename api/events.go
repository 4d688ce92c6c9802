package api

import (
	"encoding/json"
	"fmt"
	"time"
)

// The types of the events: the value of an event's type field, and its SSE event name on
// GET /api/events. myco -p --json prints the same events, one JSON object a line.
const (
	EventSession           = "session"
	EventAccepted          = "accepted"
	EventTextDelta         = "text_delta"
	EventThinkingDelta     = "thinking_delta"
	EventToolStarted       = "tool_started"
	EventToolProgress      = "tool_progress"
	EventToolFinished      = "tool_finished"
	EventStep              = "step"
	EventNotice            = "notice"
	EventResumed           = "resumed"
	EventCompacted         = "compacted"
	EventRewound           = "rewound"
	EventSaveFailed        = "save_failed"
	EventDone              = "done"
	EventError             = "error"
	EventCancelled         = "cancelled"
	EventState             = "state"
	EventMeta              = "meta"
	EventHost              = "host"
	EventReset             = "reset"
	EventCheckpoint        = "checkpoint"
	EventCreated           = "created"
	EventChildCreated      = "child_created"
	EventApprovalRequested = "approval_requested"
	EventApprovalResolved  = "approval_resolved"
	EventPing              = "ping"
	EventChanges           = "changes"
)

// Event is one event of the event stream (GET /api/events) and of myco -p --json: a value
// of one of the *Event types of this package, told apart by its type field, or an
// [UnknownEvent] for a type this package does not know (a later myco may add types: skip
// them). [DecodeEvent] decodes one.
type Event interface {
	// Info returns what every event has: its type, session, sequence number and time.
	Info() EventInfo
	isEvent()
}

// EventInfo is what every event has.
type EventInfo struct {
	// Type is what the event is, and its SSE event name.
	Type string `json:"type"`
	// Session is the session the event is of; left out for the events of the whole
	// profile (host, and a reset of every session).
	Session string `json:"session,omitempty"`
	// Seq orders every event of the profile: it grows by one per event across all its
	// sessions. Left out in myco -p --json's own events (session, and an error before the
	// session began).
	Seq uint64 `json:"seq,omitempty"`
	// Time is when the event happened.
	Time time.Time `json:"time,omitzero"`
}

// Info returns e: every event type embeds EventInfo, and so has Info.
func (e EventInfo) Info() EventInfo { return e }

func (EventInfo) isEvent() {}

// SessionEvent is myco -p --json's first event: the session it works on (never on GET
// /api/events).
type SessionEvent struct{ EventInfo }

// AcceptedEvent says that a user turn's input is durable, as entry index of thread.
type AcceptedEvent struct {
	EventInfo
	Thread     string    `json:"thread"`
	Text       string    `json:"text,omitempty"` // the input's visible text
	AcceptedAt time.Time `json:"accepted_at"`
	Index      int       `json:"index,omitempty"` // the input's entry in the thread; left out for 0
	Count      int       `json:"count"`           // the thread's entries with the input
}

// TextDeltaEvent is assistant text as it streams. Deltas that come within 40 ms of each
// other are joined into one event.
type TextDeltaEvent struct {
	EventInfo
	Text string `json:"text,omitempty"`
}

// ThinkingDeltaEvent is reasoning text as it streams, joined as text_delta is.
type ThinkingDeltaEvent struct {
	EventInfo
	Text string `json:"text,omitempty"`
}

// ToolStartedEvent says that a tool call started.
type ToolStartedEvent struct {
	EventInfo
	Tool   string          `json:"tool,omitempty"`    // the tool's name
	CallID string          `json:"call_id,omitempty"` // the call's id, as in the snapshot's tool_calls
	Input  json.RawMessage `json:"input,omitempty"`   // the call's input, as the model wrote it
	Host   string          `json:"host,omitempty"`    // the host it runs on: "local", or a remote's name
}

// ToolProgressEvent is the newest output of a running tool call, as just saved (at most
// every two seconds per call).
type ToolProgressEvent struct {
	EventInfo
	Thread string `json:"thread,omitempty"`  // the thread of the call
	CallID string `json:"call_id,omitempty"` // the call's id, as its tool_started's
	Text   string `json:"text,omitempty"`    // the output so far
}

// ToolFinishedEvent says how a tool call ended.
type ToolFinishedEvent struct {
	EventInfo
	Tool    string          `json:"tool,omitempty"`     // the tool's name
	CallID  string          `json:"call_id,omitempty"`  // the call's id, as its tool_started's
	Input   json.RawMessage `json:"input,omitempty"`    // the call's input, as the model wrote it
	Host    string          `json:"host,omitempty"`     // the host it ran on: "local", or a remote's name
	Text    string          `json:"text,omitempty"`     // the result the model gets
	IsError bool            `json:"is_error,omitempty"` // the call failed
	// Unknown says that the call's outcome is unknown: it was cut off (the process running
	// it stopped, or it was stopped) and may have taken effect.
	Unknown      bool    `json:"unknown,omitempty"`
	Stopped      bool    `json:"stopped,omitempty"`       // the call was stopped while it ran (unknown too)
	Images       int     `json:"images,omitempty"`        // the images of the result
	DurationSecs float64 `json:"duration_secs,omitempty"` // how long the call ran
	ExitCode     *int    `json:"exit_code,omitempty"`     // a bash command's exit status, when it exited
}

// StepEvent says that one model response ended: why it stopped, and its tokens.
type StepEvent struct {
	EventInfo
	Stop  string `json:"stop,omitempty" enum:"end,tool_use,max_tokens,refusal,pause,context,other"`
	Usage Usage  `json:"usage"`
	Cost  *Cost  `json:"cost,omitempty"` // the response's
}

// NoticeEvent is something to show that is not conversation: a retry of the model
// request, auto-compaction turned off.
type NoticeEvent struct {
	EventInfo
	Text string `json:"text,omitempty"`
}

// ResumedEvent says that the run goes on past a response cut off at the token limit, and
// why.
type ResumedEvent struct {
	EventInfo
	Text string `json:"text,omitempty"`
}

// CompactedEvent says that thread from was compacted into its successor, to.
type CompactedEvent struct {
	EventInfo
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	Auto bool   `json:"auto,omitempty"` // auto-compaction did it, not a compact action
}

// RewoundEvent says that a turn's request was rejected before it was sent: thread from
// keeps it, and the session goes on in to, from the last completed turn.
type RewoundEvent struct {
	EventInfo
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
	Error string `json:"error,omitempty"` // why it was rejected
}

// SaveFailedEvent says that a save failed: the session's work is stopped.
type SaveFailedEvent struct {
	EventInfo
	Error string `json:"error,omitempty"`
}

// DoneEvent says that a job ended as it should: a turn with its answer, or a compaction
// (from and to).
type DoneEvent struct {
	EventInfo
	Job          string  `json:"job,omitempty" enum:"turn,compact"`
	DurationSecs float64 `json:"duration_secs,omitempty"` // how long the job ran
	// Text is a turn's answer, or what a compaction did.
	Text       string `json:"text,omitempty"`
	Stop       string `json:"stop,omitempty" enum:"end,tool_use,max_tokens,refusal,pause,context,other"`
	Usage      *Usage `json:"usage,omitempty"` // a turn's tokens
	Cost       *Cost  `json:"cost,omitempty"`  // and what they cost
	Steps      int    `json:"steps,omitempty"` // a turn's model responses
	CapReached bool   `json:"cap_reached,omitempty"`
	From       string `json:"from,omitempty"` // a compaction's thread
	To         string `json:"to,omitempty"`   // and its successor
}

// ErrorEvent says that a turn or a compaction failed: code is the kind of failure (the
// codes of a snapshot's last_error.code), error what happened and what to do, in the words
// every front end shows, and detail the technical chain.
type ErrorEvent struct {
	EventInfo
	Job          string  `json:"job,omitempty" enum:"turn,compact"`
	DurationSecs float64 `json:"duration_secs,omitempty"`
	Code         string  `json:"code,omitempty"`
	Error        string  `json:"error,omitempty"`
	Detail       string  `json:"detail,omitempty"`
}

// CancelledEvent says that a turn or a compaction was stopped: code and error say why (a
// stop asked for, the server stopping), as an error event's do.
type CancelledEvent struct {
	EventInfo
	Job          string  `json:"job,omitempty" enum:"turn,compact"`
	DurationSecs float64 `json:"duration_secs,omitempty"`
	Code         string  `json:"code,omitempty"`
	Error        string  `json:"error,omitempty"`
	Detail       string  `json:"detail,omitempty"`
}

// StateEvent says that work started (busy true) or ended (busy false): the job and its
// id, for a cancel.
type StateEvent struct {
	EventInfo
	Busy  bool   `json:"busy"`
	Job   string `json:"job,omitempty" enum:"turn,compact"`
	JobID string `json:"job_id,omitempty"`
}

// MetaEvent says that the session's metadata changed: its title, whether it is archived,
// its model.
type MetaEvent struct {
	EventInfo
	Title    string `json:"title"`
	Archived bool   `json:"archived"`
	Model    string `json:"model,omitempty"`
}

// HostEvent says that a remote host's state changed (an event of the whole profile).
type HostEvent struct {
	EventInfo
	Host     string `json:"host,omitempty"`  // its name in ~/.ssh/config
	State    string `json:"state,omitempty"` // connecting, connected, disconnected, …
	Error    string `json:"error,omitempty"` // why it is not connected
	Attaches int    `json:"attaches,omitempty"`
}

// ResetEvent says that the stream missed events it can no longer get (its cursor is older
// than the events the server keeps, or of another run of the server): read the session's
// snapshot again. Without session, every session's.
type ResetEvent struct{ EventInfo }

// CheckpointEvent says that entries index to count-1 of thread are durable.
type CheckpointEvent struct {
	EventInfo
	Thread string `json:"thread,omitempty"`
	Index  int    `json:"index,omitempty"` // the first new entry; left out for 0
	Count  int    `json:"count,omitempty"` // the thread's entries
}

// CreatedEvent says that the session was created.
type CreatedEvent struct {
	EventInfo
	Title         string `json:"title"`
	Model         string `json:"model,omitempty"`
	ParentSession string `json:"parent_session,omitempty"` // a child's parent
}

// ChildCreatedEvent, on the parent's stream, says that a child of the session was
// created.
type ChildCreatedEvent struct {
	EventInfo
	ChildSession string `json:"child_session,omitempty"`
	Model        string `json:"model,omitempty"`
}

// PingEvent comes on GET /api/events when nothing else did for 15 s.
type PingEvent struct{ EventInfo }

// UnknownEvent is an event of a type this package does not know, which a later myco may
// send: skip it. Data is its JSON.
type UnknownEvent struct {
	EventInfo
	Data json.RawMessage `json:"-"`
}

// eventType is an event type this package knows: its name, a new zero value of its struct
// and a decoder of its JSON.
type eventType struct {
	name   string
	new    func() Event
	decode func([]byte) (Event, error)
}

// events are the event types, in the order the document lists them.
var events = []eventType{
	event[AcceptedEvent](EventAccepted),
	event[TextDeltaEvent](EventTextDelta),
	event[ThinkingDeltaEvent](EventThinkingDelta),
	event[ToolStartedEvent](EventToolStarted),
	event[ToolProgressEvent](EventToolProgress),
	event[ToolFinishedEvent](EventToolFinished),
	event[StepEvent](EventStep),
	event[NoticeEvent](EventNotice),
	event[ResumedEvent](EventResumed),
	event[CompactedEvent](EventCompacted),
	event[RewoundEvent](EventRewound),
	event[SaveFailedEvent](EventSaveFailed),
	event[DoneEvent](EventDone),
	event[ErrorEvent](EventError),
	event[CancelledEvent](EventCancelled),
	event[StateEvent](EventState),
	event[MetaEvent](EventMeta),
	event[HostEvent](EventHost),
	event[ResetEvent](EventReset),
	event[CheckpointEvent](EventCheckpoint),
	event[CreatedEvent](EventCreated),
	event[ChildCreatedEvent](EventChildCreated),
	event[ChangesEvent](EventChanges),
	event[ApprovalRequestedEvent](EventApprovalRequested),
	event[ApprovalResolvedEvent](EventApprovalResolved),
	event[SessionEvent](EventSession),
	event[PingEvent](EventPing),
}

func event[T any, P interface {
	*T
	Event
}](name string) eventType {
	return eventType{name, func() Event { return P(new(T)) }, func(data []byte) (Event, error) {
		var v T
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, err
		}
		return any(v).(Event), nil
	}}
}

// EventTypes returns the types of the events this package knows.
func EventTypes() []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.name
	}
	return out
}

// NewEvent returns a pointer to a new zero event of type typ (its type field not set), to
// decode into; false for a type this package does not know.
func NewEvent(typ string) (Event, bool) {
	for _, e := range events {
		if e.name == typ {
			return e.new(), true
		}
	}
	return nil, false
}

// DecodeEvent decodes an event's JSON (the data of a server-sent event, a line of myco -p
// --json) into the value of its type: an [AcceptedEvent], a [StateEvent], …, or an
// [UnknownEvent]. Fields it does not know are skipped, as a later myco may add some.
func DecodeEvent(data []byte) (Event, error) {
	var info EventInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("api: decode an event: %w", err)
	}
	for _, e := range events {
		if e.name == info.Type {
			ev, err := e.decode(data)
			if err != nil {
				return nil, fmt.Errorf("api: decode a %s event: %w", info.Type, err)
			}
			return ev, nil
		}
	}
	return UnknownEvent{EventInfo: info, Data: append(json.RawMessage(nil), data...)}, nil
}
