package agent

import (
	"time"

	"myco.dev/agent/model"
)

// Event is something that happened during a run, delivered to [Options.Sink]. The set is
// closed: [TextDelta], [ThinkingDelta], [Notice], [ToolStarted], [ToolFinished], [StepDone]
// and [Resumed].
type Event interface{ isEvent() }

// TextDelta is visible assistant text as it streams.
type TextDelta struct{ Text string }

// ThinkingDelta is reasoning text as it streams.
type ThinkingDelta struct{ Text string }

// Notice is something the user should see that is not part of the conversation, such as a
// retry after a transient model failure. Notices never enter the history.
type Notice struct{ Text string }

// ToolStarted is emitted, in call order, just before a tool call starts running.
type ToolStarted struct{ Call model.ToolCall }

// ToolFinished is emitted when a tool call returns, in completion order. A call that was
// still running when the run was cancelled finishes with an Unknown result.
type ToolFinished struct {
	Call     model.ToolCall
	Result   model.ToolResult
	Duration time.Duration
}

// StepDone ends one model response: why it stopped and what it cost.
type StepDone struct {
	Stop  model.StopReason
	Usage model.Usage
}

// Resumed reports that the run continues past a response cut off at the output token limit.
// N counts the consecutive resumes so far, Max is the configured cap.
type Resumed struct {
	Reason string
	N, Max int
}

func (TextDelta) isEvent()     {}
func (ThinkingDelta) isEvent() {}
func (Notice) isEvent()        {}
func (ToolStarted) isEvent()   {}
func (ToolFinished) isEvent()  {}
func (StepDone) isEvent()      {}
func (Resumed) isEvent()       {}

// emit delivers ev to the sink. Tool goroutines emit too, so calls are serialized: the sink
// never runs twice at once.
func (a *Agent) emit(ev Event) {
	if a.opts.Sink == nil {
		return
	}
	a.sinkMu.Lock()
	defer a.sinkMu.Unlock()
	a.opts.Sink(ev)
}
