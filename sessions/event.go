package sessions

import (
	"time"

	"myco.dev/agent"
)

// Event is something the runner reports to its sink. The set is closed: [AgentEvent],
// [Checkpointed], [Compacted], [Rewound], [SaveFailed], [Notice], [Progress] and [Accepted].
type Event interface{ isEvent() }

// AgentEvent is an event of the running agent.
type AgentEvent struct{ agent.Event }

// Checkpointed reports that thread Thread is durable up to Messages entries, of which
// those from First on are new.
type Checkpointed struct {
	Thread   string
	First    int
	Messages int
}

// Compacted reports a successor thread made by compaction.
type Compacted struct {
	From, To string
	Auto     bool
}

// Rewound reports a turn rejected before upload: From keeps it, To continues from the last
// completed turn.
type Rewound struct {
	From, To string
	Err      error
}

// SaveFailed reports a save error that stopped the session's work.
type SaveFailed struct{ Err error }

// Notice is something the user should see, such as auto-compaction being turned off.
type Notice struct{ Text string }

// Accepted reports that a user turn's input is durable, with its acceptance time. Text
// is the input's visible text.
type Accepted struct {
	Thread string
	Index  int // the input's entry in Thread
	At     time.Time
	Text   string
}

// Progress reports the newest output of a running tool call, as just saved (at most every
// two seconds per call).
type Progress struct {
	Thread, CallID string
	Output         string
}

func (AgentEvent) isEvent()   {}
func (Checkpointed) isEvent() {}
func (Compacted) isEvent()    {}
func (Rewound) isEvent()      {}
func (SaveFailed) isEvent()   {}
func (Notice) isEvent()       {}
func (Progress) isEvent()     {}
func (Accepted) isEvent()     {}
