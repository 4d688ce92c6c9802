package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
)

func newAgent(t *testing.T, m *fakeModel, tools Tools, rec *recorder, o Options) *Agent {
	t.Helper()
	m.t = t
	o.Model = m
	o.Tools = tools
	o.Log = testLog(t)
	if rec != nil {
		o.Sink = rec.sink
	}
	return New(o)
}

func TestToolRoundThenAnswer(t *testing.T) {
	m := &fakeModel{turns: []turn{
		doneTurn(model.StopToolUse, model.TextPart("looking"), call("c1")),
		answerTurn("all done"),
	}}
	tools := &fakeTools{}
	a := newAgent(t, m, tools, nil, Options{
		APIModel: "m-1", MaxOutputTokens: 4096, Thinking: "adaptive", Effort: "high", CacheKey: "k", System: "sys",
	})
	in := []model.Message{userText("hi")}
	h, res, err := a.Run(t.Context(), in)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := "user: text(hi)\n" +
		"assistant: text(looking) call(c1)\n" +
		"user: result(c1=ran bash {\"command\":\"c1\"})\n" +
		"assistant: text(all done)\n"
	if got := dump(h); got != want {
		t.Errorf("history:\n%s\nwant:\n%s", got, want)
	}
	if len(in) != 1 {
		t.Errorf("Run modified its input: len = %d", len(in))
	}
	if res.Answer != "all done" || res.Stop != model.StopEnd || res.Steps != 2 {
		t.Errorf("Result = %+v, want answer %q, stop end, 2 steps", res, "all done")
	}
	if want := (model.Usage{Input: 200, Output: 20}); res.Usage != want {
		t.Errorf("Usage = %+v, want %+v", res.Usage, want)
	}
	if want := (model.Usage{Input: 100, Output: 10}); res.LastUsage != want {
		t.Errorf("LastUsage = %+v, want %+v", res.LastUsage, want)
	}
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d requests, want 2", len(reqs))
	}
	r := reqs[0]
	if r.Model != "m-1" || r.System != "sys" || r.MaxOutputTokens != 4096 || r.Thinking != "adaptive" || r.Effort != "high" || r.CacheKey != "k" {
		t.Errorf("request fields = %+v", r)
	}
	if len(r.Tools) != 1 || r.Tools[0].Name != "bash" {
		t.Errorf("request tools = %+v, want the Tools specs", r.Tools)
	}
	if got := dump(reqs[1].Messages); got != dump(h[:3]) {
		t.Errorf("second request messages:\n%s\nwant:\n%s", got, dump(h[:3]))
	}
}

func TestToolsRunConcurrentlyInCallOrder(t *testing.T) {
	m := &fakeModel{turns: []turn{
		doneTurn(model.StopToolUse, call("a"), call("b")),
		answerTurn("ok"),
	}}
	started := make(chan string, 2)
	bothStarted := make(chan struct{})
	bFinished := make(chan struct{})
	go func() {
		<-started
		<-started
		close(bothStarted)
	}()
	tools := &fakeTools{fn: func(ctx context.Context, c model.ToolCall) model.ToolResult {
		started <- c.ID
		// The barrier releases only once both calls have started: run one after the
		// other, the first would wait here until the timeout.
		select {
		case <-bothStarted:
		case <-time.After(10 * time.Second):
			return model.ToolResult{Text: "timed out: calls did not run concurrently", IsError: true}
		}
		if c.ID == "a" {
			<-bFinished // a finishes last, yet its result must come first
		}
		return model.ToolResult{Text: "done " + c.ID}
	}}
	rec := &recorder{}
	a := newAgent(t, m, tools, nil, Options{Sink: func(ev Event) {
		rec.sink(ev)
		if f, ok := ev.(ToolFinished); ok && f.Call.ID == "b" {
			close(bFinished)
		}
	}})
	h, _, err := a.Run(t.Context(), []model.Message{userText("go")})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := dump(h[2:3]), "user: result(a=done a) result(b=done b)\n"; got != want {
		t.Errorf("results message = %q, want %q", got, want)
	}
	var finished []string
	for _, ev := range rec.events {
		if f, ok := ev.(ToolFinished); ok {
			finished = append(finished, f.Call.ID)
		}
	}
	if !slices.Equal(finished, []string{"b", "a"}) {
		t.Errorf("ToolFinished order = %v, want [b a] (completion order)", finished)
	}
}

func TestTruncation(t *testing.T) {
	cut := func(text string) turn { return doneTurn(model.StopMaxTokens, model.TextPart(text)) }
	cutCall := func(id string) turn { return doneTurn(model.StopMaxTokens, model.TextPart("x"), call(id)) }
	for _, tt := range []struct {
		name      string
		cap       int
		turns     []turn
		history   string // the messages after the user's input
		answer    string
		resumes   int
		capHit    bool
		toolCalls []string
	}{
		{
			name:  "mid-sentence is continued by a user message",
			cap:   3,
			turns: []turn{cut("The answer is"), answerTurn(" 42.")},
			history: "assistant: text(The answer is)\n" +
				"user: text(" + ContinuePrompt + ")\n" +
				"assistant: text( 42.)\n",
			answer:  "The answer is 42.",
			resumes: 1,
		},
		{
			name:  "tool calls are run and the run continues",
			cap:   3,
			turns: []turn{cutCall("c1"), answerTurn("ok")},
			history: "assistant: text(x) call(c1)\n" +
				"user: result(c1=ran bash {\"command\":\"c1\"})\n" +
				"assistant: text(ok)\n",
			answer:    "ok",
			resumes:   1,
			toolCalls: []string{"c1"},
		},
		{
			name:  "cap reached",
			cap:   2,
			turns: []turn{cut("a"), cutCall("c1"), cut("c")},
			history: "assistant: text(a)\n" +
				"user: text(" + ContinuePrompt + ")\n" +
				"assistant: text(x) call(c1)\n" +
				"user: result(c1=ran bash {\"command\":\"c1\"})\n" +
				"assistant: text(c)\n",
			answer:    "c",
			resumes:   2,
			capHit:    true,
			toolCalls: []string{"c1"},
		},
		{
			name:  "tool calls at the cap are answered without running",
			cap:   1,
			turns: []turn{cut("a"), cutCall("c1")},
			history: "assistant: text(a)\n" +
				"user: text(" + ContinuePrompt + ")\n" +
				"assistant: text(x) call(c1)\n" +
				"user: result(c1!=" + notRun([]model.ToolCall{{ID: "c1"}}, 1)[0].Text + ")\n",
			answer:  "ax",
			resumes: 1,
			capHit:  true,
		},
		{
			name:  "another stop reason resets the count",
			cap:   1,
			turns: []turn{cut("a"), doneTurn(model.StopToolUse, call("c1")), cut("b"), answerTurn("c")},
			history: "assistant: text(a)\n" +
				"user: text(" + ContinuePrompt + ")\n" +
				"assistant: call(c1)\n" +
				"user: result(c1=ran bash {\"command\":\"c1\"})\n" +
				"assistant: text(b)\n" +
				"user: text(" + ContinuePrompt + ")\n" +
				"assistant: text(c)\n",
			answer:    "bc",
			resumes:   2,
			toolCalls: []string{"c1"},
		},
		{
			name:    "cap 0 never resumes",
			cap:     0,
			turns:   []turn{cut("a")},
			history: "assistant: text(a)\n",
			answer:  "a",
			capHit:  true,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := &fakeModel{turns: tt.turns}
			tools := &fakeTools{}
			rec := &recorder{}
			a := newAgent(t, m, tools, rec, Options{MaxTruncatedResumes: tt.cap})
			h, res, err := a.Run(t.Context(), []model.Message{userText("q")})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := dump(h[1:]); got != tt.history {
				t.Errorf("history:\n%s\nwant:\n%s", got, tt.history)
			}
			checkConsistent(t, h)
			if res.Answer != tt.answer || res.TruncatedResumes != tt.resumes || res.CapReached != tt.capHit {
				t.Errorf("Result = answer %q, resumes %d, cap reached %v; want %q, %d, %v",
					res.Answer, res.TruncatedResumes, res.CapReached, tt.answer, tt.resumes, tt.capHit)
			}
			if got := tools.called(); !slices.Equal(got, tt.toolCalls) {
				t.Errorf("tool calls = %v, want %v", got, tt.toolCalls)
			}
			resumed := 0
			for _, k := range rec.kinds() {
				if k == "Resumed" {
					resumed++
				}
			}
			if resumed != tt.resumes {
				t.Errorf("got %d Resumed events, want %d", resumed, tt.resumes)
			}
			if n := len(m.requests()); n != len(tt.turns) {
				t.Errorf("got %d requests, want %d", n, len(tt.turns))
			}
		})
	}
}

func TestPauseIsResent(t *testing.T) {
	m := &fakeModel{turns: []turn{
		doneTurn(model.StopPause, model.TextPart("searching")),
		answerTurn("found"),
	}}
	a := newAgent(t, m, &fakeTools{}, nil, Options{})
	h, res, err := a.Run(t.Context(), []model.Message{userText("q")})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := "user: text(q)\nassistant: text(searching)\nassistant: text(found)\n"
	if got := dump(h); got != want {
		t.Errorf("history:\n%s\nwant:\n%s", got, want)
	}
	if got, want := dump(m.requests()[1].Messages), "user: text(q)\nassistant: text(searching)\n"; got != want {
		t.Errorf("resent request:\n%s\nwant:\n%s", got, want)
	}
	if res.Answer != "found" {
		t.Errorf("Answer = %q, want %q", res.Answer, "found")
	}

	// Pauses in a row are bounded.
	var turns []turn
	for range maxPauses + 3 {
		turns = append(turns, doneTurn(model.StopPause, model.TextPart("p")))
	}
	m = &fakeModel{turns: turns}
	a = newAgent(t, m, &fakeTools{}, nil, Options{})
	_, res, err = a.Run(t.Context(), []model.Message{userText("q")})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Steps != maxPauses+1 || res.Stop != model.StopPause {
		t.Errorf("Result = %d steps, stop %s; want %d, pause", res.Steps, res.Stop, maxPauses+1)
	}
}

func TestFinalStops(t *testing.T) {
	for _, stop := range []model.StopReason{model.StopEnd, model.StopRefusal, model.StopContext, model.StopOther} {
		t.Run(string(stop), func(t *testing.T) {
			m := &fakeModel{turns: []turn{doneTurn(stop, model.TextPart("bye"))}}
			a := newAgent(t, m, &fakeTools{}, nil, Options{MaxTruncatedResumes: 3})
			_, res, err := a.Run(t.Context(), []model.Message{userText("q")})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Stop != stop || res.Answer != "bye" || res.Steps != 1 {
				t.Errorf("Result = %+v, want stop %s, answer bye, 1 step", res, stop)
			}
		})
	}
}

var errStopped = errors.New("stopped by user")

func TestCancelDuringTool(t *testing.T) {
	m := &fakeModel{turns: []turn{doneTurn(model.StopToolUse, call("fast"), call("slow"))}}
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	// The slow call cancels the run once the fast one has finished: the cancel comes while
	// it runs. (The sink must not wait for the slow call: it holds the lock the run needs to
	// announce that call.)
	fastFinished := make(chan struct{})
	tools := &fakeTools{fn: func(ctx context.Context, c model.ToolCall) model.ToolResult {
		if c.ID == "fast" {
			return model.ToolResult{Text: "fast done"}
		}
		<-fastFinished
		cancel(errStopped)
		<-ctx.Done()
		return model.ToolResult{Text: "killed", IsError: true}
	}}
	var checkpoints [][]model.Message
	rec := &recorder{}
	a := newAgent(t, m, tools, nil, Options{
		Sink: func(ev Event) {
			rec.sink(ev)
			if f, ok := ev.(ToolFinished); ok && f.Call.ID == "fast" {
				close(fastFinished)
			}
		},
		Checkpoint: func(ctx context.Context, h []model.Message) error {
			checkpoints = append(checkpoints, cloneHistory(h))
			return nil
		},
	})
	h, _, err := a.Run(ctx, []model.Message{userText("q")})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errStopped) {
		t.Fatalf("Run error = %v, want context.Canceled and the cause", err)
	}
	want := "user: text(q)\n" +
		"assistant: call(fast) call(slow)\n" +
		"user: result(fast=fast done) result(slow?=" + cancelledText + ")\n"
	if got := dump(h); got != want {
		t.Errorf("history:\n%s\nwant:\n%s", got, want)
	}
	checkConsistent(t, h)
	if n := len(checkpoints); n != 2 || dump(checkpoints[1]) != want {
		t.Errorf("got %d checkpoints, want 2, the last with the cancelled batch", n)
	}
	if n := len(m.requests()); n != 1 {
		t.Errorf("got %d model requests, want 1", n)
	}
	var slow ToolFinished
	for _, ev := range rec.events {
		if f, ok := ev.(ToolFinished); ok && f.Call.ID == "slow" {
			slow = f
		}
	}
	if !slow.Result.Unknown {
		t.Errorf("ToolFinished for the slow call = %+v, want an Unknown result", slow)
	}
}

// TestCancelKeepsAToolsOwnUnknownResult: a tool that answers a cancelled call with an
// Unknown result of its own (what it printed before the cut) keeps that answer.
func TestCancelKeepsAToolsOwnUnknownResult(t *testing.T) {
	m := &fakeModel{turns: []turn{doneTurn(model.StopToolUse, call("slow"))}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	tools := &fakeTools{fn: func(ctx context.Context, c model.ToolCall) model.ToolResult {
		cancel()
		<-ctx.Done()
		return model.ToolResult{Text: "cut off; printed: line 1", Unknown: true, Stopped: true}
	}}
	a := newAgent(t, m, tools, nil, Options{})
	h, _, err := a.Run(ctx, []model.Message{userText("q")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want context.Canceled", err)
	}
	want := "user: text(q)\n" +
		"assistant: call(slow)\n" +
		"user: result(slow?=cut off; printed: line 1)\n"
	if got := dump(h); got != want {
		t.Errorf("history:\n%s\nwant:\n%s", got, want)
	}
}

func TestCancelDuringStreaming(t *testing.T) {
	m := &fakeModel{
		turns: []turn{
			doneTurn(model.StopToolUse, call("c1")),
			{chunks: []model.Chunk{model.TextDelta{Text: "half a "}}, block: true},
		},
		started: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-m.started
		cancel()
	}()
	rec := &recorder{}
	a := newAgent(t, m, &fakeTools{}, rec, Options{})
	h, res, err := a.Run(ctx, []model.Message{userText("q")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want context.Canceled", err)
	}
	// The half-streamed response is dropped.
	want := "user: text(q)\nassistant: call(c1)\nuser: result(c1=ran bash {\"command\":\"c1\"})\n"
	if got := dump(h); got != want {
		t.Errorf("history:\n%s\nwant:\n%s", got, want)
	}
	if res.Steps != 1 {
		t.Errorf("Steps = %d, want 1", res.Steps)
	}
	ks := rec.kinds()
	if ks[len(ks)-1] != "TextDelta" {
		t.Errorf("events = %v, want the partial text delta last", ks)
	}
}

func TestCancelBeforeRun(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	m := &fakeModel{}
	a := newAgent(t, m, &fakeTools{}, nil, Options{})
	_, _, err := a.Run(ctx, []model.Message{userText("q")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want context.Canceled", err)
	}
	if n := len(m.requests()); n != 0 {
		t.Errorf("got %d requests, want 0", n)
	}
}

func TestCheckpoint(t *testing.T) {
	script := func() []turn {
		return []turn{
			doneTurn(model.StopToolUse, call("c1")),
			doneTurn(model.StopToolUse, call("c2")),
			answerTurn("done"),
		}
	}
	t.Run("after each step and batch", func(t *testing.T) {
		var lens []int
		a := newAgent(t, &fakeModel{turns: script()}, &fakeTools{}, nil, Options{
			Checkpoint: func(ctx context.Context, h []model.Message) error {
				lens = append(lens, len(h))
				return nil
			},
		})
		if _, _, err := a.Run(t.Context(), []model.Message{userText("q")}); err != nil {
			t.Fatalf("Run: %v", err)
		}
		// step 1, batch 1, step 2, batch 2, final step
		if want := []int{2, 3, 4, 5, 6}; !slices.Equal(lens, want) {
			t.Errorf("checkpoint history lengths = %v, want %v", lens, want)
		}
	})
	for _, tt := range []struct {
		name     string
		failAt   int // 1-based checkpoint call that fails
		requests int
		calls    []string
	}{
		{"after a step, before its tools", 1, 1, nil},
		{"after a batch, before the next request", 2, 1, []string{"c1"}},
		{"after the second step", 3, 2, []string{"c1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			errDisk := errors.New("disk full")
			n := 0
			m := &fakeModel{turns: script()}
			tools := &fakeTools{}
			a := newAgent(t, m, tools, nil, Options{
				Checkpoint: func(ctx context.Context, h []model.Message) error {
					n++
					if n == tt.failAt {
						return errDisk
					}
					return nil
				},
			})
			_, _, err := a.Run(t.Context(), []model.Message{userText("q")})
			if !errors.Is(err, errDisk) {
				t.Fatalf("Run error = %v, want it to wrap %v", err, errDisk)
			}
			if got := len(m.requests()); got != tt.requests {
				t.Errorf("got %d model requests, want %d", got, tt.requests)
			}
			if got := tools.called(); !slices.Equal(got, tt.calls) {
				t.Errorf("tool calls = %v, want %v", got, tt.calls)
			}
			if n != tt.failAt {
				t.Errorf("checkpoint called %d times, want %d", n, tt.failAt)
			}
		})
	}
}

func TestModelError(t *testing.T) {
	tooLarge := &model.RequestTooLargeError{Size: 200, Limit: 100}
	m := &fakeModel{turns: []turn{
		doneTurn(model.StopToolUse, call("c1")),
		{err: tooLarge},
	}}
	a := newAgent(t, m, &fakeTools{}, nil, Options{})
	h, _, err := a.Run(t.Context(), []model.Message{userText("q")})
	var tl *model.RequestTooLargeError
	if !errors.As(err, &tl) || tl != tooLarge {
		t.Fatalf("Run error = %v, want the RequestTooLargeError", err)
	}
	if len(h) != 3 {
		t.Errorf("history has %d messages, want 3", len(h))
	}
	checkConsistent(t, h)

	// A stream that ends without Done is an error too, and leaves nothing behind.
	m = &fakeModel{turns: []turn{{chunks: []model.Chunk{model.TextDelta{Text: "par"}}}}}
	a = newAgent(t, m, &fakeTools{}, nil, Options{})
	h, _, err = a.Run(t.Context(), []model.Message{userText("q")})
	if !errors.Is(err, model.ErrTruncatedStream) {
		t.Fatalf("Run error = %v, want ErrTruncatedStream", err)
	}
	if len(h) != 1 {
		t.Errorf("history has %d messages, want 1", len(h))
	}
}

func TestNoticesAndEventOrder(t *testing.T) {
	m := &fakeModel{turns: []turn{
		{chunks: []model.Chunk{
			model.Notice{Text: "overloaded; retrying in 500ms (attempt 2 of 3)", Attempt: 1},
			model.ThinkingDelta{Text: "hmm"},
			model.ToolCallStart{Index: 0, ID: "c1", Name: "bash"},
			model.ToolCallDelta{Index: 0, Args: "{}"},
			model.Done{Message: assistant(call("c1")), Stop: model.StopToolUse},
		}},
		answerTurn("done"),
	}}
	rec := &recorder{}
	a := newAgent(t, m, &fakeTools{}, rec, Options{})
	h, _, err := a.Run(t.Context(), []model.Message{userText("q")})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{"Notice", "ThinkingDelta", "StepDone", "ToolStarted", "ToolFinished", "TextDelta", "StepDone"}
	if got := rec.kinds(); !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if n, ok := rec.events[0].(Notice); !ok || !strings.Contains(n.Text, "retrying") {
		t.Errorf("first event = %#v, want the retry notice", rec.events[0])
	}
	if strings.Contains(dump(h), "retrying") {
		t.Errorf("notice reached the history:\n%s", dump(h))
	}
	for _, r := range m.requests() {
		if strings.Contains(dump(r.Messages), "retrying") {
			t.Errorf("notice reached a request:\n%s", dump(r.Messages))
		}
	}
}

func TestHistoryRepairedBeforeRequest(t *testing.T) {
	// A history saved mid-batch ends with calls whose results were never recorded.
	in := []model.Message{userText("q"), assistant(call("c1"))}
	m := &fakeModel{turns: []turn{answerTurn("checked")}}
	a := newAgent(t, m, &fakeTools{}, nil, Options{})
	h, _, err := a.Run(t.Context(), in)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := "user: text(q)\nassistant: call(c1)\nuser: result(c1?=" + unknownText + ")\n"
	if got := dump(m.requests()[0].Messages); got != want {
		t.Errorf("request messages:\n%s\nwant:\n%s", got, want)
	}
	if got := dump(h); got != want+"assistant: text(checked)\n" {
		t.Errorf("history:\n%s", got)
	}
}

func TestBeforeStep(t *testing.T) {
	m := &fakeModel{turns: []turn{doneTurn(model.StopToolUse, call("c1")), answerTurn("ok")}}
	n := 0
	a := newAgent(t, m, &fakeTools{}, nil, Options{
		BeforeStep: func(ctx context.Context, h []model.Message) []model.Message {
			n++
			last := &h[len(h)-1]
			last.Parts = append(last.Parts, model.SystemPart("prelude", "note"))
			return h
		},
	})
	h, _, err := a.Run(t.Context(), []model.Message{userText("q")})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n != 2 {
		t.Errorf("BeforeStep called %d times, want 2", n)
	}
	want := "user: text(q) system(note)\n" +
		"assistant: call(c1)\n" +
		"user: result(c1=ran bash {\"command\":\"c1\"}) system(note)\n"
	if got := dump(m.requests()[1].Messages); got != want {
		t.Errorf("second request:\n%s\nwant:\n%s", got, want)
	}
	if got := dump(h[:3]); got != want {
		t.Errorf("history:\n%s\nwant:\n%s", got, want)
	}
}

func TestEmptyResponseNotAppended(t *testing.T) {
	m := &fakeModel{turns: []turn{{chunks: []model.Chunk{model.Done{Stop: model.StopEnd}}}}}
	a := newAgent(t, m, &fakeTools{}, nil, Options{})
	h, res, err := a.Run(t.Context(), []model.Message{userText("q")})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(h) != 1 || res.Answer != "" || res.Steps != 1 {
		t.Errorf("Run = %d messages, answer %q, %d steps; want 1, empty, 1", len(h), res.Answer, res.Steps)
	}
}
