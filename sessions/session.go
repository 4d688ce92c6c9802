package sessions

import (
	"time"

	"myco/agent/model"
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
	Threads    []*Thread `json:"threads"`
}

// Thread is one linear history within a session.
type Thread struct {
	ID          string    `json:"id"`
	Created     time.Time `json:"created"`
	Predecessor string    `json:"predecessor,omitempty"`
	Successor   string    `json:"successor,omitempty"`
	Entries     []Entry   `json:"entries"`
	// Usage is the latest usage report for this thread's context: Usage.Input estimates how
	// much of the window the thread fills.
	Usage model.Usage `json:"usage,omitzero"`
}

// Entry is one message of a thread with its bookkeeping.
type Entry struct {
	Message model.Message `json:"message"`
	// AcceptedAt is when a human's user turn was accepted; nil for everything else (tool
	// results, continuations, and turns saved by older versions).
	AcceptedAt *time.Time `json:"accepted_at,omitempty"`
}

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

// Messages returns the thread's messages, in order.
func (t *Thread) Messages() []model.Message {
	out := make([]model.Message, len(t.Entries))
	for i, e := range t.Entries {
		out[i] = e.Message
	}
	return out
}
