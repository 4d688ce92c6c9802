package completions

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
)

// These tests run the protocol through model.Client against the fake server over real
// HTTP on loopback.

func startFake(t *testing.T, turns ...fakemodel.Turn) *fakemodel.Server {
	t.Helper()
	return fakemodel.New(t, turns...)
}

func client(srv *fakemodel.Server, retry model.RetryPolicy) *model.Client {
	return &model.Client{
		Protocol: Protocol{},
		BaseURL:  srv.URL,
		Key:      func() (string, error) { return "sk-test", nil },
		Retry:    retry,
	}
}

var fastRetry = model.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, Multiplier: 2}

type streamed struct {
	decoded
	notices []model.Notice
}

func stream(t *testing.T, c *model.Client, req model.Request) (streamed, error) {
	t.Helper()
	s := streamed{decoded: decoded{args: map[int]string{}}}
	for ch, err := range c.Stream(t.Context(), req) {
		if err != nil {
			return s, err
		}
		switch ch := ch.(type) {
		case model.TextDelta:
			s.text += ch.Text
		case model.ThinkingDelta:
			s.thinking += ch.Text
		case model.ToolCallStart:
			s.starts = append(s.starts, ch)
		case model.ToolCallDelta:
			s.args[ch.Index] += ch.Args
		case model.Notice:
			s.notices = append(s.notices, ch)
		case model.Done:
			s.dones = append(s.dones, ch)
		}
	}
	if len(s.dones) != 1 {
		t.Fatalf("Stream yielded %d Done chunks, want 1", len(s.dones))
	}
	return s, nil
}

func prompt(text string) model.Request {
	return model.Request{
		Model: "fake-model", System: "You are terse.", MaxOutputTokens: 1000,
		Messages: []model.Message{user(model.TextPart(text))},
		Tools:    []model.ToolSpec{{Name: "bash", Schema: json.RawMessage(`{"type":"object"}`)}, {Name: "view_image", Schema: json.RawMessage(`{"type":"object"}`)}},
	}
}

func TestToolRoundTripWithImage(t *testing.T) {
	srv := startFake(t,
		fakemodel.Turn{
			Thinking: "Let me look at the files.", Text: "Looking.", ChunkSize: 3,
			ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"ls"}`}, {Name: "view_image", Args: `{"path":"a.png"}`}},
			Usage:     fakemodel.Usage{Input: 50, CacheRead: 100, Output: 20, Reasoning: 8},
		},
		fakemodel.Turn{Text: "The tool said: {{tool_result}}"},
	)
	c := client(srv, fastRetry)
	req := prompt("what is in a.png?")
	first, err := stream(t, c, req)
	if err != nil {
		t.Fatalf("first Stream: %v", err)
	}
	done := first.dones[0]
	want := model.Done{
		Message: asst(thinkingPart("Let me look at the files."), model.TextPart("Looking."),
			callPart("call_1", "bash", `{"command":"ls"}`), callPart("call_2", "view_image", `{"path":"a.png"}`)),
		Stop:  model.StopToolUse,
		Usage: model.Usage{Input: 150, CacheRead: 100, Output: 20, Reasoning: 8},
	}
	if !reflect.DeepEqual(done, want) {
		t.Fatalf("first Done =\n%s\nwant\n%s", js(done), js(want))
	}
	if first.args[0] != `{"command":"ls"}` || first.args[1] != `{"path":"a.png"}` {
		t.Errorf("argument deltas = %v", first.args)
	}

	img := model.Image{MediaType: "image/png", Data: "iVBORw0KGgo="}
	req.Messages = append(req.Messages, done.Message, user(
		resultPart(model.ToolResult{CallID: "call_1", Text: "a.png\n"}),
		resultPart(model.ToolResult{CallID: "call_2", Text: "viewed a.png", Images: []model.Image{img}}),
	))
	second, err := stream(t, c, req)
	if err != nil {
		t.Fatalf("second Stream: %v", err) // the fake rejects misplaced images with a 400
	}
	if got, want := second.dones[0].Message.Text(), "The tool said: viewed a.png"; got != want {
		t.Errorf("second answer = %q, want %q", got, want)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(reqs))
	}
	if got := reqs[1].Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	var body struct {
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			Reasoning string          `json:"reasoning_content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range body.Messages {
		roles = append(roles, m.Role)
	}
	if want := []string{"system", "user", "assistant", "tool", "tool", "user"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("second request roles = %v, want %v", roles, want)
	}
	if got := body.Messages[2].Reasoning; got != "Let me look at the files." {
		t.Errorf("assistant reasoning_content = %q", got)
	}
	if last := string(body.Messages[5].Content); !strings.Contains(last, `"image_url"`) || !strings.Contains(last, "call_2") {
		t.Errorf("user message after the tool messages = %s, want the image of call_2", last)
	}
}

func TestQuirks(t *testing.T) {
	calls := []fakemodel.ToolCall{{ID: "call_a", Name: "bash", Args: `{"command":"ls -la"}`}, {ID: "call_b", Name: "bash", Args: `{"command":"pwd"}`}}
	for _, tt := range []struct {
		name string
		turn fakemodel.Turn
		want model.Done
	}{
		{"reasoning field", fakemodel.Turn{ReasoningField: "reasoning", Thinking: "Hmm, two plus two.", Text: "4", Usage: fakemodel.Usage{Input: 5, Output: 3}},
			model.Done{Message: asst(thinkingPart("Hmm, two plus two."), model.TextPart("4")), Stop: model.StopEnd, Usage: model.Usage{Input: 5, Output: 3}}},
		{"reasoning_content field", fakemodel.Turn{Thinking: "Hmm.", Text: "4"},
			model.Done{Message: asst(thinkingPart("Hmm."), model.TextPart("4")), Stop: model.StopEnd}},
		{"whole tool calls", fakemodel.Turn{WholeToolCalls: true, ToolCalls: calls, Usage: fakemodel.Usage{Input: 9, Output: 4}},
			model.Done{Message: asst(callPart("call_a", "bash", `{"command":"ls -la"}`), callPart("call_b", "bash", `{"command":"pwd"}`)), Stop: model.StopToolUse, Usage: model.Usage{Input: 9, Output: 4}}},
		{"usage on finish", fakemodel.Turn{UsageOnFinish: true, Text: "Hello there.", Usage: fakemodel.Usage{Input: 7, CacheRead: 3, Output: 2}},
			model.Done{Message: asst(model.TextPart("Hello there.")), Stop: model.StopEnd, Usage: model.Usage{Input: 10, CacheRead: 3, Output: 2}}},
		{"max tokens cuts the last call", fakemodel.Turn{Stop: "max_tokens", Text: "Both:", ToolCalls: calls},
			model.Done{Message: asst(model.TextPart("Both:"), callPart("call_a", "bash", `{"command":"ls -la"}`)), Stop: model.StopMaxTokens}},
		{"max tokens cuts text", fakemodel.Turn{Stop: "max_tokens", Text: "abcdefgh"},
			model.Done{Message: asst(model.TextPart("abcd")), Stop: model.StopMaxTokens}},
		{"refusal", fakemodel.Turn{Stop: "refusal", Text: "No."},
			model.Done{Message: asst(model.TextPart("No.")), Stop: model.StopRefusal}},
		{"empty", fakemodel.Turn{},
			model.Done{Message: asst(), Stop: model.StopEnd}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startFake(t, tt.turn)
			got, err := stream(t, client(srv, fastRetry), prompt("go"))
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if !reflect.DeepEqual(got.dones[0], tt.want) {
				t.Errorf("Done =\n%s\nwant\n%s", js(got.dones[0]), js(tt.want))
			}
			if got.text != tt.want.Message.Text() {
				t.Errorf("text deltas = %q, want %q", got.text, tt.want.Message.Text())
			}
		})
	}
}

func TestRetry(t *testing.T) {
	srv := startFake(t,
		fakemodel.Turn{Status: http.StatusServiceUnavailable, ErrorType: "server_error", RetryAfter: "1"},
		fakemodel.Turn{Text: "ok"},
	)
	got, err := stream(t, client(srv, fastRetry), prompt("go"))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if len(got.notices) != 1 {
		t.Fatalf("notices = %v, want 1", got.notices)
	}
	// Retry-After (1s) asks for more than the 1ms backoff and is capped by MaxBackoff.
	if n := got.notices[0]; n.Delay != fastRetry.MaxBackoff || n.Attempt != 1 {
		t.Errorf("notice = %+v, want attempt 1 with delay %s", n, fastRetry.MaxBackoff)
	}
	if got.text != "ok" || srv.Served() != 2 {
		t.Errorf("after retry: text %q, served %d; want ok, 2", got.text, srv.Served())
	}
}

func TestNotRetried(t *testing.T) {
	for _, tt := range []struct {
		name  string
		turn  fakemodel.Turn
		check func(error) bool
	}{
		{"401", fakemodel.Turn{Status: http.StatusUnauthorized, ErrorType: "invalid_request_error", ErrorMessage: "Incorrect API key provided"},
			func(err error) bool {
				var pe *model.ProviderError
				return errors.As(err, &pe) && pe.Status == 401 && !pe.Retryable && pe.Message == "Incorrect API key provided"
			}},
		{"mid-stream error", fakemodel.Turn{Text: "partial answer", MidStreamError: "server_error"},
			func(err error) bool {
				var pe *model.ProviderError
				return errors.As(err, &pe) && pe.MidStream && pe.Type == "server_error" && pe.Retryable
			}},
		{"dropped connection", fakemodel.Turn{Text: "partial answer", Drop: true},
			func(err error) bool { return errors.Is(err, model.ErrTruncatedStream) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startFake(t, tt.turn, fakemodel.Turn{Text: "should not be reached"})
			got, err := stream(t, client(srv, fastRetry), prompt("go"))
			if err == nil || !tt.check(err) {
				t.Fatalf("Stream error = %v", err)
			}
			if srv.Served() != 1 || len(got.notices) != 0 {
				t.Errorf("served %d turns with %d notices, want 1 and 0", srv.Served(), len(got.notices))
			}
		})
	}
}

// A stream dropped before any chunk reached the caller is a connection failure: nothing
// can be duplicated, so it is retried.
func TestDroppedBeforeContentRetried(t *testing.T) {
	srv := startFake(t, fakemodel.Turn{Drop: true}, fakemodel.Turn{Text: "ok"})
	got, err := stream(t, client(srv, fastRetry), prompt("go"))
	if err != nil || got.text != "ok" || srv.Served() != 2 || len(got.notices) != 1 {
		t.Fatalf("text %q, err %v, served %d, notices %d; want ok after one retry", got.text, err, srv.Served(), len(got.notices))
	}
}

// TestFakeRejects checks that the fake enforces the rules the round trip relies on.
func TestFakeRejects(t *testing.T) {
	const calls = `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"bash","arguments":"{}"}}]}`
	for _, tt := range []struct {
		name, body string
		code       int
	}{
		{"valid", `{"model":"m","max_completion_tokens":5,"messages":[{"role":"user","content":"hi"},` + calls + `,{"role":"tool","tool_call_id":"c1","content":"a"},{"role":"tool","tool_call_id":"c2","content":[{"type":"text","text":"b"}]},{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}]}`, 200},
		{"not json", `{"model":`, 400},
		{"max_tokens", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"unanswered call", `{"model":"m","messages":[{"role":"user","content":"hi"},` + calls + `,{"role":"tool","tool_call_id":"c1","content":"a"}]}`, 400},
		{"orphan tool message", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c9","content":"a"}]}`, 400},
		{"image in tool message", `{"model":"m","messages":[{"role":"user","content":"hi"},` + calls + `,{"role":"tool","tool_call_id":"c1","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]},{"role":"tool","tool_call_id":"c2","content":"b"}]}`, 400},
		{"user between tool messages", `{"model":"m","messages":[{"role":"user","content":"hi"},` + calls + `,{"role":"tool","tool_call_id":"c1","content":"a"},{"role":"user","content":"img"},{"role":"tool","tool_call_id":"c2","content":"b"}]}`, 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startFake(t, fakemodel.Turn{Text: "ok"})
			resp, err := http.Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.code {
				t.Fatalf("POST %s: code = %d, want %d (%s)", tt.name, resp.StatusCode, tt.code, b)
			}
			if tt.code == 400 {
				if typ, msg := model.ErrorBody(b); typ != "invalid_request_error" || msg == "" {
					t.Errorf("error body = %s, want invalid_request_error with a message", b)
				}
			}
		})
	}
}

// TestFakeStreamShape pins the framing a real server uses: a role chunk first, a comment
// keep-alive, no usage unless asked for, and [DONE] last.
func TestFakeStreamShape(t *testing.T) {
	for _, tt := range []struct {
		name      string
		options   string
		wantUsage bool
	}{
		{"usage asked", `,"stream_options":{"include_usage":true}`, true},
		{"usage not asked", ``, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startFake(t, fakemodel.Turn{Text: "hi", Usage: fakemodel.Usage{Input: 1, Output: 1}})
			resp, err := http.Post(srv.URL+"/chat/completions", "application/json",
				strings.NewReader(`{"model":"m","stream":true`+tt.options+`,"messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			s := string(b)
			if !strings.HasPrefix(s, `data: {"id":"chatcmpl-`) || !strings.Contains(s, `"delta":{"content":"","role":"assistant"}`) {
				t.Errorf("stream does not start with the role chunk:\n%s", s)
			}
			if !strings.Contains(s, "\n: ") {
				t.Errorf("stream has no comment keep-alive:\n%s", s)
			}
			if !strings.HasSuffix(s, "data: [DONE]\n\n") {
				t.Errorf("stream does not end with [DONE]:\n%s", s)
			}
			if got := strings.Contains(s, `"prompt_tokens"`); got != tt.wantUsage {
				t.Errorf("usage sent = %v, want %v:\n%s", got, tt.wantUsage, s)
			}
		})
	}
}
