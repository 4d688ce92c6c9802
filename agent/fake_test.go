package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"testing"

	"myco.dev/agent/model"
)

// turn is one scripted model response: its chunks, then err if set. With block set the
// response hangs after its chunks until ctx is done, as a slow stream would.
type turn struct {
	chunks []model.Chunk
	err    error
	block  bool
}

// fakeModel plays turns in order and records the requests it got.
type fakeModel struct {
	t       *testing.T
	mu      sync.Mutex // guards the fields below
	turns   []turn
	reqs    []model.Request
	started chan struct{} // when set, receives a value once a blocking turn is reached
}

func (f *fakeModel) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		f.mu.Lock()
		req.Messages = cloneHistory(req.Messages)
		f.reqs = append(f.reqs, req)
		if len(f.turns) == 0 {
			f.mu.Unlock()
			f.t.Errorf("model request %d: no scripted turn left", len(f.reqs))
			yield(nil, fmt.Errorf("no scripted turn"))
			return
		}
		tn := f.turns[0]
		f.turns = f.turns[1:]
		f.mu.Unlock()
		for _, c := range tn.chunks {
			if !yield(c, nil) {
				return
			}
		}
		if tn.block {
			if f.started != nil {
				f.started <- struct{}{}
			}
			<-ctx.Done()
			yield(nil, context.Cause(ctx))
			return
		}
		if tn.err != nil {
			yield(nil, tn.err)
		}
	}
}

func (f *fakeModel) requests() []model.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// fakeTools answers every call with "ran NAME INPUT", or with what fn returns when set.
type fakeTools struct {
	fn    func(ctx context.Context, call model.ToolCall) model.ToolResult
	mu    sync.Mutex // guards calls
	calls []string
}

func (f *fakeTools) Specs() []model.ToolSpec {
	return []model.ToolSpec{{Name: "bash", Description: "run commands", Schema: json.RawMessage(`{"type":"object"}`)}}
}

func (f *fakeTools) Call(ctx context.Context, call model.ToolCall) model.ToolResult {
	f.mu.Lock()
	f.calls = append(f.calls, call.ID)
	f.mu.Unlock()
	if f.fn != nil {
		return f.fn(ctx, call)
	}
	return model.ToolResult{CallID: call.ID, Text: "ran " + call.Name + " " + string(call.Input)}
}

func (f *fakeTools) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex // guards events
	events []Event
}

func (r *recorder) sink(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []string
	for _, ev := range r.events {
		ks = append(ks, reflect.TypeOf(ev).Name())
	}
	return ks
}

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil))
}

func cloneHistory(h []model.Message) []model.Message {
	out := make([]model.Message, len(h))
	for i, m := range h {
		out[i] = model.Message{Role: m.Role, Parts: slices.Clone(m.Parts)}
	}
	return out
}

// Builders for scripted responses and histories.

func userText(s string) model.Message {
	return model.Message{Role: model.User, Parts: []model.Part{model.TextPart(s)}}
}

func call(id string) model.Part {
	return model.Part{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: id, Name: "bash", Input: json.RawMessage(`{"command":"` + id + `"}`)}}
}

func result(id, text string) model.Part {
	return model.Part{Kind: model.KindToolResult, ToolResult: &model.ToolResult{CallID: id, Text: text}}
}

func assistant(parts ...model.Part) model.Message {
	return model.Message{Role: model.Assistant, Parts: parts}
}

func user(parts ...model.Part) model.Message {
	return model.Message{Role: model.User, Parts: parts}
}

// answerTurn streams text and ends with it as a finished answer.
func answerTurn(text string) turn {
	return doneTurn(model.StopEnd, model.TextPart(text))
}

// doneTurn ends with a Done of stop carrying parts, streaming their text first.
func doneTurn(stop model.StopReason, parts ...model.Part) turn {
	var chunks []model.Chunk
	for _, p := range parts {
		if p.Kind == model.KindText {
			chunks = append(chunks, model.TextDelta{Text: p.Text})
		}
	}
	chunks = append(chunks, model.Done{
		Message: assistant(parts...),
		Stop:    stop,
		Usage:   model.Usage{Input: 100, Output: 10},
	})
	return turn{chunks: chunks}
}

// checkConsistent fails unless h is unchanged by RepairHistory.
func checkConsistent(t *testing.T, h []model.Message) {
	t.Helper()
	if _, changed := RepairHistory(h); changed {
		t.Errorf("history is not consistent:\n%s", dump(h))
	}
}

// dump renders h compactly: one line per message.
func dump(h []model.Message) string {
	var s string
	for _, m := range h {
		s += string(m.Role) + ":"
		for _, p := range m.Parts {
			switch p.Kind {
			case model.KindToolCall:
				s += " call(" + p.ToolCall.ID + ")"
			case model.KindToolResult:
				r := p.ToolResult
				flag := ""
				if r.Unknown {
					flag = "?"
				}
				if r.IsError {
					flag += "!"
				}
				s += " result(" + r.CallID + flag + "=" + r.Text + ")"
			case model.KindSystem:
				s += " system(" + p.Text + ")"
			default:
				s += " " + string(p.Kind) + "(" + p.Text + ")"
			}
		}
		s += "\n"
	}
	return s
}
