package sessions

import (
	"fmt"
	"time"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/hosts/snapshot"
	"myco.dev/policy"
)

// Version is the session schema version this binary writes.
const Version = 5

// Session is a durable conversation: metadata and an ordered set of threads, of which only
// the last accepts new messages.
type Session struct {
	ID         string    `json:"id"`
	Created    time.Time `json:"created"`
	Model      string    `json:"model,omitempty"` // the initial catalog key
	Title      string    `json:"title,omitempty"`
	Links      []string  `json:"links,omitempty"`
	Scratchpad string    `json:"scratchpad,omitempty"`
	Archived   bool      `json:"archived,omitempty"`
	Parent     string    `json:"parent,omitempty"`
	Hidden     bool      `json:"hidden,omitempty"`
	// Cwd is the session's directory on the local host, absolute: its local bash starts
	// there, relative paths resolve there, its project guidance is read from there. Chosen
	// at creation and never changed; empty in sessions saved before it was kept, which work
	// in their service's directory ([ManagerOptions].Dir).
	Cwd string `json:"cwd,omitempty"`
	// Selected is the catalog key chosen for the session's next turns (a model switch);
	// empty means the model of its latest runtime facts, else Model.
	Selected string `json:"selected_model,omitempty"`
	// RequestID is the API request that created the session: a retried request finds it.
	RequestID string `json:"request_id,omitempty"`
	// RequestSum is a digest of what that request asked (see [requestSum]), so that the same
	// id sent with a different body is told apart from a retry.
	RequestSum string `json:"request_sum,omitempty"`
	// Actions are the newest API actions done on the session, by request id, so that a
	// retried action is not done twice (at most [maxActions]).
	Actions []ActionRecord `json:"actions,omitempty"`
	// Queue holds the messages sent while the session was busy, in order: each runs as the
	// next turn once the one before it ended (see [Manager.Enqueue]).
	Queue []Queued `json:"queue,omitempty"`
	// Mode is the session's approval mode (policy.Mode); "" means its service's default.
	Mode string `json:"mode,omitempty"`
	// Rules are the session's own rules: "allow always for this session" adds one.
	Rules []policy.Rule `json:"rules,omitempty"`
	// Approvals are the tool calls waiting for the person's answer, oldest first.
	Approvals []Approval `json:"pending_approvals,omitempty"`
	// MaxCost is the budget of the session's tree (it and every descendant), in the
	// catalog's money; 0 means none of its own (a root then has the service's default).
	MaxCost float64   `json:"max_cost,omitempty"`
	Threads []*Thread `json:"threads"`

	// Upgraded is the schema version of the file this session was loaded from when that
	// was older than [Version] (2, 3 or 4), and 0 otherwise. Such a file is rewritten as a
	// version 5 log on the first write, never on load.
	Upgraded int `json:"-"`

	restores []*restoreRec          // the undos, redos and reverts, in order (see [Manager.Restore])
	heads    map[string]snapshot.ID // by host: the newest capture of its files, after a batch or a restore
}

// ModelKey returns the catalog key the session's next turn uses: the selected one, else
// the one its latest runtime facts name, else its initial one.
func (s *Session) ModelKey() string {
	if s.Selected != "" {
		return s.Selected
	}
	for i := len(s.Threads) - 1; i >= 0; i-- {
		if f := s.Threads[i].Facts(); f != nil && f.ModelKey != "" {
			return f.ModelKey
		}
	}
	return s.Model
}

// maxActions bounds the action records a session keeps.
const maxActions = 64

// ActionRecord is an API action done on a session: its request id, what it was, when, and
// its outcome as the API answered it.
type ActionRecord struct {
	RequestID string    `json:"request_id"`
	Action    string    `json:"action"`
	At        time.Time `json:"at"`
	Result    string    `json:"result,omitempty"`
	// Sum is a digest of what the request asked; empty in records saved before it was kept.
	Sum string `json:"sum,omitempty"`
}

// Action returns the record of request id, if the session keeps one.
func (s *Session) Action(requestID string) (ActionRecord, bool) {
	for _, a := range s.Actions {
		if a.RequestID == requestID {
			return a, true
		}
	}
	return ActionRecord{}, false
}

// noteAction adds a record, dropping the oldest beyond [maxActions].
func (s *Session) noteAction(a ActionRecord) {
	s.Actions = append(s.Actions, a)
	if n := len(s.Actions); n > maxActions {
		s.Actions = append([]ActionRecord(nil), s.Actions[n-maxActions:]...)
	}
}

// Thread is one linear history within a session.
type Thread struct {
	ID          string    `json:"id"`
	Created     time.Time `json:"created"`
	Predecessor string    `json:"predecessor,omitempty"`
	Successor   string    `json:"successor,omitempty"`
	// Reason says why the thread was started after its predecessor: "compaction" or
	// "rewind"; empty for a session's first thread.
	Reason string `json:"reason,omitempty"`
	// Base is how many entries the thread had when it was started (the summary and retained
	// context of a compaction, the kept turns of a rewind).
	Base    int     `json:"base,omitempty"`
	Entries []Entry `json:"entries"`
	// Usage is the latest usage report for this thread's context: Usage.Input estimates how
	// much of the window the thread fills.
	Usage model.Usage `json:"usage,omitzero"`

	saved    int                     // entries already on disk; the rest were made by recovery
	open     bool                    // a turn started and no end was recorded
	end      string                  // the status of the last recorded turn end
	intents  map[string]*intentRec   // tool calls started since the last user message
	results  map[string]*resultRec   // tool results recorded since the last user message
	progress map[string]*progressRec // the newest output of calls still running
	partial  *partialRec             // what streamed of the answer being written, when saved
	calls    map[string]CallInfo     // every tool call's host and times, for display
	spent    model.Usage             // the sum of every usage report: what its responses cost
	// spentBy is spent by the catalog key of the model that reported it ("" for reports
	// saved without one), which prices it
	spentBy map[string]model.Usage
	ends    []TurnEnd // how each turn ended, in order
}

// CallInfo is what the log says of one tool call beyond its message parts: where and
// when it ran. Calls saved by older versions have none.
type CallInfo struct {
	Host     string
	Started  time.Time
	Finished time.Time // zero while running, or when the process stopped first
}

// TurnEnd is how a turn ended: its status ([TurnDone], [TurnCancelled], …), the error
// that ended it, and After, the number of the thread's entries when it ended.
type TurnEnd struct {
	After  int
	Status string
	Error  string // what a person is told, for a turn that did not end with an answer
	Code   string // its kind, one of [Kinds]; empty in records saved before codes were kept
	Detail string // the technical chain under Error; empty when there is none
	At     time.Time
}

// Call returns what the log recorded of tool call id.
func (t *Thread) Call(id string) (CallInfo, bool) {
	c, ok := t.calls[id]
	return c, ok
}

// ContextUsed is how many tokens the thread's context held at its latest model response:
// the prompt's tokens, cached ones included (the protocols count those in Usage.Input),
// what the context meter USER n/m shows.
func (t *Thread) ContextUsed() int { return t.Usage.Input }

// Spent returns the sum of the usage reports of the thread's model responses (those saved
// with version 5 records): the tokens its work cost.
func (t *Thread) Spent() model.Usage { return t.spent }

// addSpent counts a usage report of model key's.
func (t *Thread) addSpent(key string, u model.Usage) {
	t.spent = t.spent.Add(u)
	if t.spentBy == nil {
		t.spentBy = map[string]model.Usage{}
	}
	t.spentBy[key] = t.spentBy[key].Add(u)
}

// SpentByModel returns the tokens the session's responses cost by the catalog key of the
// model that answered, over all its threads; usage saved before the key was recorded is
// counted under the session's model.
func (s *Session) SpentByModel() map[string]model.Usage {
	out := map[string]model.Usage{}
	for _, t := range s.Threads {
		for k, u := range t.spentBy {
			if k == "" {
				k = s.ModelKey()
			}
			out[k] = out[k].Add(u)
		}
	}
	return out
}

// Spent returns the tokens the session's responses cost, over all its threads.
func (s *Session) Spent() model.Usage {
	var u model.Usage
	for _, t := range s.Threads {
		u = u.Add(t.spent)
	}
	return u
}

// WorkTime returns the time the session's turns took, from each input's acceptance to
// its turn's end; a turn still running counts until now. The entries a thread started with
// (kept or retained from its predecessor, or a fork's parent) and rejected copies are
// counted where they ran.
func (s *Session) WorkTime(now time.Time) time.Duration {
	var d time.Duration
	for _, t := range s.Threads {
		ends := t.ends
		k := 0
		for i, e := range t.Entries {
			if e.AcceptedAt == nil || e.Rejected || i < t.Base {
				continue
			}
			for k < len(ends) && ends[k].After <= i {
				k++
			}
			switch {
			case k < len(ends):
				d += ends[k].At.Sub(*e.AcceptedAt)
			case t.open && t == s.Latest():
				d += now.Sub(*e.AcceptedAt)
			}
		}
	}
	return d
}

// OpenCalls returns the tool calls of the session's running turn that started and have
// no result yet.
func (s *Session) OpenCalls() int {
	t := s.Latest()
	if t == nil || !t.open {
		return 0
	}
	n := 0
	for _, c := range t.calls {
		if !c.Started.IsZero() && c.Finished.IsZero() {
			n++
		}
	}
	return n
}

// Ends returns how the thread's turns ended, oldest first.
func (t *Thread) Ends() []TurnEnd { return t.ends }

func (t *Thread) noteCall(id, host string, started, finished time.Time) {
	if t.calls == nil {
		t.calls = map[string]CallInfo{}
	}
	c := t.calls[id]
	// Wall-clock times only: a time read back from the log has no monotonic reading, and a
	// duration must come out the same before and after.
	started, finished = started.Round(0), finished.Round(0)
	if host != "" {
		c.Host = host
	}
	if !started.IsZero() {
		c.Started = started
	}
	if !finished.IsZero() {
		c.Finished = finished
	}
	t.calls[id] = c
}

// Entry is one message of a thread with its bookkeeping.
type Entry struct {
	Message model.Message `json:"message"`
	// AcceptedAt is when a human's user turn was accepted; nil for everything else (tool
	// results, continuations, and turns saved by older versions).
	AcceptedAt *time.Time `json:"accepted_at,omitempty"`
	// Continuation marks a user message the runner wrote to continue work without a human,
	// such as the # Resumption message after auto-compaction. It starts a turn.
	Continuation bool `json:"continuation,omitempty"`
	// Facts are the structured runtime facts that this message's hidden "runtime" part
	// describes to the model.
	Facts *Facts `json:"facts,omitempty"`
	// Recovered marks a message made on load for tool calls that a stopped process left
	// without results.
	Recovered bool `json:"recovered,omitempty"`
	// RequestID is the API request that submitted this user turn: a retried request finds
	// it instead of submitting again. RequestSum is a digest of what the request asked.
	RequestID  string `json:"request_id,omitempty"`
	RequestSum string `json:"request_sum,omitempty"`
	// Rejected marks the copy of a rejected turn's input that a rewound thread shows after
	// the turns it kept: it is part of the transcript but never of the model's input (the
	// predecessor thread keeps the original).
	Rejected bool `json:"rejected,omitempty"`
	// Partial marks the part of an answer that streamed before its turn ended without it:
	// "stopped" (the user stopped the turn), "failed" (the model stream broke, the request
	// failed) or "interrupted" (myco itself stopped; recovered from its last partial
	// record). A person sees it, with how it ended; the model never does, so a retry
	// starts from the turn's input.
	Partial string `json:"partial,omitempty"`
	// Snapshots are the captures of the session's files around the tool batch whose
	// results this entry holds, host by host (see [Capture]); nil when the batch was not
	// captured.
	Snapshots []Capture `json:"snapshots,omitempty"`
}

// The values of [Entry.Partial].
const (
	PartialStopped     = "stopped"
	PartialFailed      = "failed"
	PartialInterrupted = "interrupted"
)

// modelInput reports whether e is part of what the model is sent: all but the copies of
// rejected inputs and the partial answers, which only a person sees.
func (e Entry) modelInput() bool { return !e.Rejected && e.Partial == "" }

// Facts describe the runtime a thread's work happens in: who owns the live tool handles,
// and which model ran. They reach the model as a hidden system part.
type Facts struct {
	// Session and Parent identify the session the facts were observed in; a fork's first
	// facts differ from its parent's in these.
	Session  string    `json:"session,omitempty"`
	Parent   string    `json:"parent,omitempty"`
	Dir      string    `json:"dir,omitempty"` // the session's directory; empty in facts recorded before it was kept
	Owner    string    `json:"owner"`
	Observed time.Time `json:"observed"`
	ModelKey string    `json:"model_key,omitempty"`
	APIModel string    `json:"api_model,omitempty"`
	Protocol string    `json:"protocol,omitempty"`
	Effort   string    `json:"effort,omitempty"`
	// ImageCap is the model's max_image_base64_bytes, the largest image view_image may
	// return to it; 0 in facts recorded before it was kept.
	ImageCap int `json:"image_cap,omitempty"`
	// Handles is the inventory of tool handles the owner holds (bash sessions, editor read
	// stamps), one line each.
	Handles []string `json:"handles,omitempty"`
	// Stale is set when the inventory could not be taken; Handles are then last known.
	Stale bool `json:"stale,omitempty"`
}

// Turn end statuses, as recorded in the log.
const (
	TurnDone      = "done"      // the model answered
	TurnCancelled = "cancelled" // the user stopped it; final, never resumed
	TurnFailed    = "failed"    // a model or save error ended it
	TurnRejected  = "rejected"  // the request was refused before upload; the thread was rewound
	// TurnCompacted ends a turn in a thread that auto-compaction replaced between tool
	// rounds: the turn goes on in the successor.
	TurnCompacted = "compacted"
)

// Latest returns the thread that accepts new messages.
func (s *Session) Latest() *Thread {
	if len(s.Threads) == 0 {
		return nil
	}
	return s.Threads[len(s.Threads)-1]
}

// Thread returns the thread with the given id, or nil.
func (s *Session) Thread(id string) *Thread {
	for _, t := range s.Threads {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// Messages returns the thread's messages as stored, in order. They may not be valid model
// input; see [Thread.History].
func (t *Thread) Messages() []model.Message {
	out := make([]model.Message, len(t.Entries))
	for i, e := range t.Entries {
		out[i] = e.Message
	}
	return out
}

// Interrupted reports that the thread's last turn started and never ended: the process
// stopped during it. Such a turn can be resumed by the runner; a cancelled one
// cannot.
func (t *Thread) Interrupted() bool { return t.open }

// LastTurn returns the status of the thread's last ended turn ([TurnDone], [TurnCancelled],
// [TurnFailed], [TurnRejected]), or "" when none was recorded.
func (t *Thread) LastTurn() string { return t.end }

// Facts returns the latest runtime facts recorded in the thread (the model saw them), or
// nil.
func (t *Thread) Facts() *Facts {
	for i := len(t.Entries) - 1; i >= 0; i-- {
		if f := t.Entries[i].Facts; f != nil && t.Entries[i].modelInput() {
			return f
		}
	}
	return nil
}

// History returns the thread as model input: rejected inputs left out, consecutive user
// messages (an input after a turn that stopped before its answer) merged into one, and
// malformed tool call/result pairs repaired by [agent.RepairHistory]. Stored entries are
// never changed.
func (t *Thread) History() []model.Message {
	h := merged(t.input())
	if fixed, changed := agent.RepairHistory(h); changed {
		return fixed
	}
	return h
}

// Executable returns an error when the stored messages cannot be sent to a model as they
// are: a tool call without its result, a result without its call, or results out of order.
// Such a thread stays readable; [Thread.History] repairs it before use.
func (t *Thread) Executable() error {
	if _, changed := agent.RepairHistory(merged(t.input())); changed {
		return fmt.Errorf("thread %s: malformed tool call/result pairs; the history must be repaired before use", t.ID)
	}
	return nil
}

// input returns the messages of the thread that are model input: all but rejected inputs.
func (t *Thread) input() []model.Message {
	out := make([]model.Message, 0, len(t.Entries))
	for _, e := range t.Entries {
		if e.modelInput() {
			out = append(out, e.Message)
		}
	}
	return out
}

// merged joins consecutive user messages, which the providers reject.
func merged(h []model.Message) []model.Message {
	out := make([]model.Message, 0, len(h))
	for _, m := range h {
		if n := len(out); n > 0 && m.Role == model.User && out[n-1].Role == model.User {
			out[n-1] = model.Message{Role: model.User, Parts: append(append([]model.Part(nil), out[n-1].Parts...), m.Parts...)}
			continue
		}
		out = append(out, m)
	}
	return out
}
