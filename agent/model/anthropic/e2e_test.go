package anthropic_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/agent/model/anthropic"
	"myco.dev/internal/fakemodel"
)

// start runs a fake model with turns and returns a client for it.
func start(t *testing.T, turns ...fakemodel.Turn) (*fakemodel.Server, *model.Client) {
	t.Helper()
	srv := fakemodel.New(t, turns...)
	c := &model.Client{
		Protocol: anthropic.Protocol{},
		BaseURL:  srv.URL,
		Key:      func() (string, error) { return "sk-test", nil },
		Retry:    model.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, Multiplier: 2},
	}
	return srv, c
}

// run streams req and returns the Done, the notices and the error.
func run(t *testing.T, c *model.Client, req model.Request) (done model.Done, chunks []model.Chunk, notices []model.Notice, err error) {
	t.Helper()
	for ch, e := range c.Stream(t.Context(), req) {
		if e != nil {
			return done, chunks, notices, e
		}
		chunks = append(chunks, ch)
		switch ch := ch.(type) {
		case model.Done:
			done = ch
		case model.Notice:
			notices = append(notices, ch)
		}
	}
	return done, chunks, notices, nil
}

var bashTool = model.ToolSpec{Name: "bash", Description: "Run a shell command.", Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)}

func TestToolRoundTrip(t *testing.T) {
	srv, c := start(t,
		fakemodel.Turn{
			Thinking:         "The user wants a listing; run ls.",
			RedactedThinking: "EmwKAhgBEgy",
			Text:             "Let me look.",
			ToolCalls: []fakemodel.ToolCall{
				{ID: "toolu_01", Name: "bash", Args: `{"command":"ls -la \"my dir\""}`},
				{ID: "toolu_02", Name: "bash", Args: `{"command":"pwd"}`},
			},
			ChunkSize: 3,
			Usage:     fakemodel.Usage{Input: 10, CacheRead: 500, CacheWrite: 40, Output: 77, Reasoning: 20},
		},
		fakemodel.Turn{Thinking: "Report it.", Text: "You have: {{tool_result}}"},
	)
	history := []model.Message{{Role: model.User, Parts: []model.Part{model.TextPart("What is here?")}}}
	req := model.Request{Model: "claude-test", System: "Be brief.", Tools: []model.ToolSpec{bashTool}, MaxOutputTokens: 4096, Thinking: "budget"}

	req.Messages = history
	done, chunks, _, err := run(t, c, req)
	if err != nil {
		t.Fatalf("first turn: %v", err)
	}
	if done.Stop != model.StopToolUse {
		t.Errorf("first turn Stop = %q, want tool_use", done.Stop)
	}
	if want := (model.Usage{Input: 550, Output: 77, CacheRead: 500, CacheWrite: 40, Reasoning: 20}); done.Usage != want {
		t.Errorf("first turn Usage = %+v, want %+v", done.Usage, want)
	}
	calls := done.Message.ToolCalls()
	if len(calls) != 2 || calls[0].ID != "toolu_01" || string(calls[0].Input) != `{"command":"ls -la \"my dir\""}` || calls[1].ID != "toolu_02" {
		t.Fatalf("first turn calls = %+v", calls)
	}
	var args string
	for _, ch := range chunks {
		if d, ok := ch.(model.ToolCallDelta); ok && d.Index == 0 {
			args += d.Args
		}
	}
	if args != string(calls[0].Input) {
		t.Errorf("streamed arguments of call 0 = %q, want %q", args, calls[0].Input)
	}
	if p := done.Message.Parts; len(p) < 2 || p[0].Kind != model.KindThinking || p[0].Thinking.Signature == "" || p[1].Thinking == nil || p[1].Thinking.Redacted != "EmwKAhgBEgy" {
		t.Fatalf("first turn parts = %+v, want signed thinking then redacted thinking", p)
	}

	// Send the history back with the results: the fake checks pairing and signatures.
	history = append(history, done.Message, model.Message{Role: model.User, Parts: []model.Part{
		{Kind: model.KindToolResult, ToolResult: &model.ToolResult{CallID: "toolu_01", Text: "a.txt\n"}},
		{Kind: model.KindToolResult, ToolResult: &model.ToolResult{CallID: "toolu_02", Text: "/work\n"}},
	}})
	req.Messages = history
	done, _, _, err = run(t, c, req)
	if err != nil {
		t.Fatalf("second turn: %v", err)
	}
	if got := done.Message.Text(); got != "You have: /work" || done.Stop != model.StopEnd {
		t.Errorf("second turn = %q (%s), want %q (end)", got, done.Stop, "You have: /work")
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("fake saw %d requests, want 2", len(reqs))
	}
	h := reqs[0].Header
	if h.Get("x-api-key") != "sk-test" || h.Get("anthropic-version") != "2023-06-01" {
		t.Errorf("request headers = %v", h)
	}
	if th := reqs[1].JSON()["thinking"]; th == nil {
		t.Errorf("second request has no thinking config")
	}

	// Tampering with the replayed thinking is rejected, and a 400 is not retried.
	history[1].Parts[0].Thinking = &model.Thinking{Protocol: anthropic.Name, Text: "edited", Signature: history[1].Parts[0].Thinking.Signature}
	srv.Script(fakemodel.Turn{Text: "unreachable"}, fakemodel.Turn{Text: "unreachable"})
	req.Messages = history
	_, _, notices, err := run(t, c, req)
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.Status != 400 || pe.Type != "invalid_request_error" || pe.Retryable {
		t.Fatalf("tampered replay: err = %v, want a non-retryable 400 invalid_request_error", err)
	}
	if len(notices) != 0 || len(srv.Requests()) != 3 {
		t.Errorf("tampered replay: %d notices, %d requests; want 0, 3", len(notices), len(srv.Requests()))
	}
}

func TestRetry(t *testing.T) {
	srv, c := start(t,
		fakemodel.Turn{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded"},
		fakemodel.Turn{Status: 429, ErrorType: "rate_limit_error", RetryAfter: "1"},
		fakemodel.Turn{Text: "finally"},
	)
	done, _, notices, err := run(t, c, model.Request{Model: "m", Messages: []model.Message{{Role: model.User, Parts: []model.Part{model.TextPart("hi")}}}})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if done.Message.Text() != "finally" {
		t.Errorf("text = %q, want finally", done.Message.Text())
	}
	if len(notices) != 2 || len(srv.Requests()) != 3 {
		t.Fatalf("%d notices, %d requests; want 2, 3", len(notices), len(srv.Requests()))
	}
	var pe *model.ProviderError
	if !errors.As(notices[0].Err, &pe) || pe.Status != 529 || pe.Type != "overloaded_error" {
		t.Errorf("first notice error = %v, want 529 overloaded_error", notices[0].Err)
	}
	if !errors.As(notices[1].Err, &pe) || pe.Status != 429 || pe.RetryAfter != time.Second {
		t.Errorf("second notice error = %#v, want 429 with Retry-After 1s", notices[1].Err)
	}
	// Retry-After asks for longer than the backoff, so the wait is capped at MaxBackoff.
	if notices[1].Delay != 20*time.Millisecond {
		t.Errorf("second notice Delay = %v, want 20ms", notices[1].Delay)
	}
}

func TestStreamFailures(t *testing.T) {
	hi := model.Request{Model: "m", Messages: []model.Message{{Role: model.User, Parts: []model.Part{model.TextPart("hi")}}}}
	for _, tt := range []struct {
		name  string
		turn  fakemodel.Turn
		check func(t *testing.T, err error)
	}{
		{"mid-stream error", fakemodel.Turn{Text: "partial answer", MidStreamError: "overloaded_error"}, func(t *testing.T, err error) {
			var pe *model.ProviderError
			if !errors.As(err, &pe) || !pe.MidStream || pe.Type != "overloaded_error" || !pe.Retryable {
				t.Errorf("err = %#v, want a retryable mid-stream overloaded_error", err)
			}
		}},
		{"dropped connection", fakemodel.Turn{Text: "partial answer", Drop: true}, func(t *testing.T, err error) {
			if !errors.Is(err, model.ErrTruncatedStream) {
				t.Errorf("err = %v, want ErrTruncatedStream", err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, c := start(t, tt.turn, fakemodel.Turn{Text: "must not be used"})
			_, chunks, notices, err := run(t, c, hi)
			tt.check(t, err)
			if len(notices) != 0 || len(srv.Requests()) != 1 {
				t.Errorf("%d notices, %d requests; want 0, 1 (streamed failures are not retried)", len(notices), len(srv.Requests()))
			}
			if len(chunks) == 0 {
				t.Errorf("no chunks before the failure")
			}
		})
	}
}

func TestStops(t *testing.T) {
	hi := []model.Message{{Role: model.User, Parts: []model.Part{model.TextPart("hi")}}}
	for _, tt := range []struct {
		name  string
		turn  fakemodel.Turn
		stop  model.StopReason
		calls int
	}{
		{"max_tokens cuts the tool call", fakemodel.Turn{Text: "Writing", ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"echo hello"}`}}, Stop: "max_tokens"}, model.StopMaxTokens, 0},
		{"max_tokens keeps finished calls", fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"a"}`}, {Name: "bash", Args: `{"command":"b"}`}}, Stop: "max_tokens"}, model.StopMaxTokens, 1},
		{"max_tokens cuts text", fakemodel.Turn{Text: "a long answer that is cut", Stop: "max_tokens"}, model.StopMaxTokens, 0},
		{"refusal", fakemodel.Turn{Text: "No.", Stop: "refusal"}, model.StopRefusal, 0},
		{"pause", fakemodel.Turn{Stop: "pause"}, model.StopPause, 0},
		{"context", fakemodel.Turn{Text: "x", Stop: "model_context_window_exceeded"}, model.StopContext, 0},
		{"tool call without arguments", fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "clock"}}}, model.StopToolUse, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, c := start(t, tt.turn)
			done, _, _, err := run(t, c, model.Request{Model: "m", Messages: hi})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if done.Stop != tt.stop || len(done.Message.ToolCalls()) != tt.calls {
				t.Errorf("Stop, calls = %q, %d; want %q, %d", done.Stop, len(done.Message.ToolCalls()), tt.stop, tt.calls)
			}
			for _, call := range done.Message.ToolCalls() {
				if !json.Valid(call.Input) {
					t.Errorf("call %s has invalid input %q", call.ID, call.Input)
				}
			}
		})
	}
}

// TestFakeValidates pins the fake's request checks that the round trip relies on.
func TestFakeValidates(t *testing.T) {
	for _, tt := range []struct{ name, body string }{
		{"not JSON", `{"model":`},
		{"no max_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
		{"starts with assistant", `{"model":"m","max_tokens":10,"messages":[{"role":"assistant","content":"hi"}]}`},
		{"no alternation", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`},
		{"empty text", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`},
		{"unanswered tool_use", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},
			{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]},
			{"role":"user","content":"b"}]}`},
		{"orphan tool_result", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},
			{"role":"assistant","content":"ok"},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"x"}]}]}`},
		{"tool_result after text", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},
			{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]},
			{"role":"user","content":[{"type":"text","text":"b"},{"type":"tool_result","tool_use_id":"t1","content":"x"}]}]}`},
		{"forged signature", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},
			{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"EqQB"},{"type":"text","text":"b"}]},
			{"role":"user","content":"c"}]}`},
		{"small budget", `{"model":"m","max_tokens":4000,"thinking":{"type":"enabled","budget_tokens":500},"messages":[{"role":"user","content":"a"}]}`},
		{"budget over max_tokens", `{"model":"m","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":2000},"messages":[{"role":"user","content":"a"}]}`},
		{"five breakpoints", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[
			{"type":"text","text":"1","cache_control":{"type":"ephemeral"}},{"type":"text","text":"2","cache_control":{"type":"ephemeral"}},
			{"type":"text","text":"3","cache_control":{"type":"ephemeral"}},{"type":"text","text":"4","cache_control":{"type":"ephemeral"}},
			{"type":"text","text":"5","cache_control":{"type":"ephemeral"}}]}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := fakemodel.Start(fakemodel.Turn{Text: "ok"})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/v1/messages", "application/json", bytes.NewBufferString(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error struct{ Type, Message string }
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != 400 || body.Error.Type != "invalid_request_error" {
				t.Errorf("POST %s = %d %s, want 400 invalid_request_error", tt.name, resp.StatusCode, body.Error.Type)
			}
			t.Logf("%s: %s", tt.name, body.Error.Message)
		})
	}
}
