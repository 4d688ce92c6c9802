package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"myco.dev/agent/model"
)

// The agent sees its context use at each step after the first, on the request only: the
// stored history carries no note.
func TestContextUseNote(t *testing.T) {
	m := &fakeModel{turns: []turn{
		doneTurn(model.StopToolUse, call("c1")),
		answerTurn("done"),
	}}
	a := newAgent(t, m, &fakeTools{}, nil, Options{ContextWindow: 1000})
	h, _, err := a.Run(t.Context(), []model.Message{userText("hi")})
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d", len(reqs))
	}
	if hasContextNote(reqs[0].Messages) {
		t.Error("the first request carries a context note before any usage was reported")
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	note := last.Parts[len(last.Parts)-1]
	if note.Kind != model.KindSystem || note.Text != "[myco: context use] 100 of 1,000 tokens (10.0% of the window)." {
		t.Errorf("last part of the second request = %+v, want the context note", note)
	}
	if hasContextNote(h) {
		t.Error("the context note leaked into the stored history")
	}
}

func hasContextNote(msgs []model.Message) bool {
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Kind == model.KindSystem && strings.HasPrefix(p.Text, "[myco: context use]") {
				return true
			}
		}
	}
	return false
}

// AfterBatch runs after each batch's checkpoint; the history it returns replaces the run's,
// the run goes on from it, and the next request carries no stale context note.
func TestAfterBatchReplacesHistory(t *testing.T) {
	m := &fakeModel{turns: []turn{
		doneTurn(model.StopToolUse, call("c1")),
		doneTurn(model.StopToolUse, call("c2")),
		answerTurn("done"),
	}}
	var seen []int
	var ckpts []int
	o := Options{ContextWindow: 1000,
		Checkpoint: func(_ context.Context, h []model.Message) error { ckpts = append(ckpts, len(h)); return nil },
		AfterBatch: func(_ context.Context, h []model.Message, last model.Usage) ([]model.Message, error) {
			seen = append(seen, len(h))
			if len(seen) == 1 {
				return []model.Message{userText("summary")}, nil
			}
			return nil, nil
		}}
	a := newAgent(t, m, &fakeTools{}, nil, o)
	h, res, err := a.Run(t.Context(), []model.Message{userText("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []int{3, 3}) {
		t.Errorf("AfterBatch saw histories of %v messages, want [3 3]", seen)
	}
	reqs := m.requests()
	if len(reqs) != 3 || len(reqs[1].Messages) != 1 || reqs[1].Messages[0].Text() != "summary" {
		t.Fatalf("the request after the replacement = %+v, want the replaced history", reqs[1].Messages)
	}
	if hasContextNote(reqs[1].Messages) || !hasContextNote(reqs[2].Messages) {
		t.Error("the first request on a replaced history must carry no context note, the next one must")
	}
	if len(h) != 4 || h[0].Text() != "summary" || res.Answer != "done" || res.Steps != 3 {
		t.Errorf("history of %d messages starting %q, answer %q, %d steps", len(h), h[0].Text(), res.Answer, res.Steps)
	}
	if ckpts[len(ckpts)-1] != 4 {
		t.Errorf("checkpoints %v, want the last of the replaced history's 4 messages", ckpts)
	}
}

func TestAfterBatchErrorStopsRun(t *testing.T) {
	m := &fakeModel{turns: []turn{doneTurn(model.StopToolUse, call("c1"))}}
	stop := errors.New("stop here")
	a := newAgent(t, m, &fakeTools{}, nil, Options{AfterBatch: func(context.Context, []model.Message, model.Usage) ([]model.Message, error) {
		return nil, stop
	}})
	h, _, err := a.Run(t.Context(), []model.Message{userText("hi")})
	if !errors.Is(err, stop) {
		t.Fatalf("Run = %v, want the AfterBatch error", err)
	}
	if len(h) != 3 || len(m.requests()) != 1 {
		t.Errorf("history %d messages after %d requests; want the batch kept and no further request", len(h), len(m.requests()))
	}
}

// AroundBatch runs around each batch: before its calls and after them, before the
// checkpoint of their results, also when the run was stopped during the batch.
func TestAroundBatch(t *testing.T) {
	m := &fakeModel{turns: []turn{
		doneTurn(model.StopToolUse, call("c1"), call("c2")),
		answerTurn("done"),
	}}
	var log []string
	o := Options{
		Checkpoint: func(_ context.Context, h []model.Message) error {
			log = append(log, fmt.Sprintf("checkpoint %d", len(h)))
			return nil
		},
		AroundBatch: func(ctx context.Context, calls []model.ToolCall, run func(context.Context) []model.ToolResult) []model.ToolResult {
			log = append(log, fmt.Sprintf("before %d calls", len(calls)))
			res := run(ctx)
			log = append(log, fmt.Sprintf("after %d results", len(res)))
			return res
		}}
	a := newAgent(t, m, &fakeTools{}, nil, o)
	if _, res, err := a.Run(t.Context(), []model.Message{userText("hi")}); err != nil || res.Answer != "done" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	want := []string{"checkpoint 2", "before 2 calls", "after 2 results", "checkpoint 3", "checkpoint 4"}
	if !slices.Equal(log, want) {
		t.Errorf("order = %q, want %q", log, want)
	}
}
