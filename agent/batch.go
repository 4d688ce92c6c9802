package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"myco.dev/agent/model"
)

// Texts of results the loop writes itself.
const (
	cancelledText = "the call was cancelled while running; it may have taken effect, so inspect its effects before retrying"
	unknownText   = "no result was recorded for this call; its outcome is unknown"
)

// runTools runs calls concurrently, one goroutine each, and returns their results in call
// order. It waits for every call, so a cancelled batch is over once every Call has returned.
// A call that returns after ctx is done gets an Unknown result: whatever it reported was
// produced by being interrupted, and it may have taken effect. A result the tool itself
// marked Unknown is kept as it is.
func (a *Agent) runTools(ctx context.Context, calls []model.ToolCall) []model.ToolResult {
	results := make([]model.ToolResult, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		a.emit(ToolStarted{Call: call})
		wg.Go(func() {
			start := time.Now()
			var res model.ToolResult
			if a.opts.Tools == nil {
				res = model.ToolResult{Text: fmt.Sprintf("unknown tool %q: no tools are available", call.Name), IsError: true}
			} else {
				res = a.opts.Tools.Call(ctx, call)
			}
			if ctx.Err() != nil && !res.Unknown {
				// A tool that says its outcome is unknown has said what it can (what it
				// printed before the cut, say); any other answer is replaced.
				res = model.ToolResult{Text: cancelledText, Unknown: true}
			}
			res.CallID = call.ID
			results[i] = res
			a.emit(ToolFinished{Call: call, Result: res, Duration: time.Since(start)})
		})
	}
	wg.Wait()
	return results
}

// notRun answers calls that the loop declined to run because the truncation cap was reached.
func notRun(calls []model.ToolCall, limit int) []model.ToolResult {
	results := make([]model.ToolResult, len(calls))
	for i, c := range calls {
		results[i] = model.ToolResult{
			CallID:  c.ID,
			Text:    fmt.Sprintf("not run: the response was cut off at the output token limit and the limit of %d consecutive truncation resumes was reached; call it again if it is still needed", limit),
			IsError: true,
		}
	}
	return results
}

// resultMessage returns the user message carrying results, in order.
func resultMessage(results []model.ToolResult) model.Message {
	parts := make([]model.Part, len(results))
	for i := range results {
		parts[i] = model.Part{Kind: model.KindToolResult, ToolResult: &results[i]}
	}
	return model.Message{Role: model.User, Parts: parts}
}

// afterBatch lets Options.AfterBatch replace the history at the boundary after a batch.
func (r *run) afterBatch(ctx context.Context) error {
	if r.a.opts.AfterBatch == nil {
		return nil
	}
	h, err := r.a.opts.AfterBatch(ctx, r.h, r.res.LastUsage)
	if err != nil {
		if ctx.Err() != nil {
			return canceled(ctx)
		}
		return fmt.Errorf("after the tool batch of step %d: %w", r.res.Steps, err)
	}
	if h != nil {
		r.h, r.fresh = h, true
	}
	return nil
}
