package sessions

import (
	"time"

	"myco.dev/agent"
)

// event is something the runner reports to its sink. The set is closed: [agentEvent],
// [checkpointed], [compacted], [rewound], [saveFailed], [notice], [toolProgress] and [accepted].
type event interface{ isEvent() }

// agentEvent is an event of the running agent.
type agentEvent struct{ agent.Event }

// checkpointed reports that thread Thread is durable up to Messages entries, of which
// those from First on are new.
type checkpointed struct {
	Thread   string
	First    int
	Messages int
}

// compacted reports a successor thread made by compaction.
type compacted struct {
	From, To string
	Auto     bool
}

// rewound reports a turn rejected before upload: From keeps it, To continues from the last
// completed turn.
type rewound struct {
	From, To string
	Err      error
}

// saveFailed reports a save error that stopped the session's work.
type saveFailed struct{ Err error }

// notice is something the user should see, such as auto-compaction being turned off.
type notice struct{ Text string }

// accepted reports that a user turn's input is durable, with its acceptance time. Text
// is the input's visible text.
type accepted struct {
	Thread string
	Index  int // the input's entry in Thread
	At     time.Time
	Text   string
}

// toolProgress reports the newest output of a running tool call, as just saved (at most every
// two seconds per call).
type toolProgress struct {
	Thread, CallID string
	Output         string
}

func (agentEvent) isEvent()   {}
func (checkpointed) isEvent() {}
func (compacted) isEvent()    {}
func (rewound) isEvent()      {}
func (saveFailed) isEvent()   {}
func (notice) isEvent()       {}
func (toolProgress) isEvent() {}
func (accepted) isEvent()     {}
