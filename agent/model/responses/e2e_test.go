package responses

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
)

// These tests run the protocol through model.Client against the fake server over real
// HTTP on 127.0.0.1. The fake checks requests the way the API does, so a successful second
// turn proves that the replayed history (reasoning blob, call pairing) is acceptable.

func startFake(t *testing.T, turns ...fakemodel.Turn) *fakemodel.Server {
	t.Helper()
	return fakemodel.New(t, turns...)
}

func client(srv *fakemodel.Server, attempts int) *model.Client {
	return &model.Client{
		Protocol: Protocol{},
		BaseURL:  srv.URL,
		Key:      func() (string, error) { return "sk-test", nil },
		Retry:    model.RetryPolicy{MaxAttempts: attempts, InitialBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond, Multiplier: 2},
	}
}

type outcome struct {
	text, thinking string
	notices        []model.Notice
	done           *model.Done
	err            error
}

func run(t *testing.T, c *model.Client, req model.Request) outcome {
	t.Helper()
	var o outcome
	for ch, err := range c.Stream(t.Context(), req) {
		if err != nil {
			o.err = err
			break
		}
		switch ch := ch.(type) {
		case model.TextDelta:
			o.text += ch.Text
		case model.ThinkingDelta:
			o.thinking += ch.Text
		case model.Notice:
			o.notices = append(o.notices, ch)
		case model.Done:
			o.done = &ch
		}
	}
	return o
}

var bashTool = []model.ToolSpec{{Name: "bash", Description: "run a command", Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}}

func TestFakeReasoningToolRoundTrip(t *testing.T) {
	srv := startFake(t,
		fakemodel.Turn{
			Thinking:  "**Listing**\n\nI should run ls.",
			ToolCalls: []fakemodel.ToolCall{{ID: "call_ls", Name: "bash", Args: `{"command":"ls"}`}},
			Usage:     fakemodel.Usage{Input: 100, CacheRead: 400, Output: 50, Reasoning: 30},
			ChunkSize: 3,
		},
		fakemodel.Turn{Text: "The files are: {{tool_result}}"},
	)
	c := client(srv, 1)
	history := []model.Message{{Role: model.User, Parts: []model.Part{model.TextPart("what files are here?")}}}
	req := model.Request{Model: "gpt-5", System: "be brief", Messages: history, Tools: bashTool}

	first := run(t, c, req)
	if first.err != nil {
		t.Fatalf("turn 1: %v", first.err)
	}
	d := first.done
	if d == nil || d.Stop != model.StopToolUse {
		t.Fatalf("turn 1 Done = %+v, want tool_use", d)
	}
	if first.thinking != "**Listing**\n\nI should run ls." {
		t.Errorf("turn 1 thinking = %q", first.thinking)
	}
	if want := (model.Usage{Input: 500, CacheRead: 400, Output: 50, Reasoning: 30}); d.Usage != want {
		t.Errorf("turn 1 usage = %+v, want %+v", d.Usage, want)
	}
	if len(d.Message.Parts) != 2 || d.Message.Parts[0].Kind != model.KindThinking {
		t.Fatalf("turn 1 parts = %+v, want thinking then tool call", d.Message.Parts)
	}
	th := d.Message.Parts[0].Thinking
	if th.Encrypted == "" || th.ID == "" || len(th.Summary) != 2 {
		t.Errorf("turn 1 thinking part = %+v, want id, encrypted content and two summary parts", th)
	}
	calls := d.Message.ToolCalls()
	if len(calls) != 1 || calls[0].ID != "call_ls" || string(calls[0].Input) != `{"command":"ls"}` || !strings.HasPrefix(calls[0].ItemID, "fc_") {
		t.Fatalf("turn 1 calls = %+v", calls)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}

	history = append(history, d.Message, model.Message{Role: model.User, Parts: []model.Part{result("call_ls", "a.txt b.txt")}})
	req.Messages = history
	second := run(t, c, req)
	if second.err != nil {
		t.Fatalf("turn 2 (replay): %v", second.err)
	}
	if second.text != "The files are: a.txt b.txt" || second.done.Stop != model.StopEnd {
		t.Errorf("turn 2 = %q, %s; want the tool result quoted and end", second.text, second.done.Stop)
	}
	body := srv.Requests()[1].JSON()
	input, _ := body["input"].([]any)
	if len(input) != 4 {
		t.Fatalf("turn 2 input has %d items, want user, reasoning, function_call, output", len(input))
	}
	rs, _ := input[1].(map[string]any)
	if rs["type"] != "reasoning" || rs["encrypted_content"] != th.Encrypted {
		t.Errorf("turn 2 input[1] = %v, want the reasoning item with its done blob", rs)
	}
}

// TestFakeRejectsBadHistory shows the fake enforces the replay rules the round trip relies on.
func TestFakeRejectsBadHistory(t *testing.T) {
	call := model.Part{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: "call_1", Name: "bash", Input: json.RawMessage(`{}`)}}
	user := model.Message{Role: model.User, Parts: []model.Part{model.TextPart("go")}}
	for _, tt := range []struct {
		name   string
		msgs   []model.Message
		status int
		msg    string
	}{
		{"result without call", []model.Message{user, {Role: model.User, Parts: []model.Part{result("call_x", "1")}}},
			400, "No tool call found for function call output with call_id call_x"},
		{"call without result", []model.Message{user, {Role: model.Assistant, Parts: []model.Part{call}}, user},
			400, "No tool output found for function call call_1"},
		{"foreign reasoning blob", []model.Message{user, {Role: model.Assistant, Parts: []model.Part{thinking("rs_1", "gAAAAABforged"), model.TextPart("hi")}}, user},
			400, "could not be verified"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startFake(t, fakemodel.Turn{Text: "unused"})
			o := run(t, client(srv, 3), model.Request{Model: "m", Messages: tt.msgs})
			var pe *model.ProviderError
			if !errors.As(o.err, &pe) || pe.Status != tt.status || !strings.Contains(pe.Message, tt.msg) || pe.Retryable {
				t.Fatalf("Stream = %v, want a non-retryable %d containing %q", o.err, tt.status, tt.msg)
			}
			if len(o.notices) != 0 {
				t.Errorf("a 4xx validation error was retried")
			}
		})
	}
}

// TestFakeValidation posts raw bodies the encoder would never produce.
func TestFakeValidation(t *testing.T) {
	// A genuine reasoning item, as the fake issued it.
	srv := startFake(t, fakemodel.Turn{Thinking: "x", Text: "y"})
	o := run(t, client(srv, 1), model.Request{Model: "m"})
	if o.err != nil {
		t.Fatal(o.err)
	}
	rs, _ := json.Marshal(reasoningOf(o.done.Message.Parts[0].Thinking))
	for _, tt := range []struct {
		name, body string
		status     int
		msg        string
	}{
		{"not json", `{"model":`, 400, "could not parse the JSON"},
		{"reasoning without encrypted content", `{"store":false,"input":[{"type":"reasoning","id":"rs_9","summary":[]},{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}]}`,
			404, "Item with id 'rs_9' not found. Items are not persisted when `store` is set to false."},
		{"reasoning last", `{"store":false,"input":[` + string(rs) + `]}`, 400, "without its required following item"},
		{"input_text in an assistant message", `{"input":[{"type":"message","role":"assistant","content":[{"type":"input_text","text":"x"}]}]}`, 400, "Invalid value: 'input_text'"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startFake(t, fakemodel.Turn{})
			resp, err := http.Post(srv.URL+"/responses", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var buf bytes.Buffer
			buf.ReadFrom(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(buf.String(), tt.msg) {
				t.Errorf("POST %s = %d %s, want %d containing %q", tt.body, resp.StatusCode, buf.String(), tt.status, tt.msg)
			}
		})
	}
}

// TestFakeStream checks the fake's stream framing: event names match the data type and
// sequence numbers rise from 0, with a keep-alive comment and obfuscated deltas.
func TestFakeStream(t *testing.T) {
	srv := startFake(t, fakemodel.Turn{Thinking: "a\n\nb", Text: "hello world", ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"ls"}`}}})
	body, _ := Protocol{}.Encode(model.Request{Model: "m", Messages: []model.Message{{Role: model.User, Parts: []model.Part{model.TextPart("hi")}}}})
	resp, err := http.Post(srv.URL+"/responses", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var name string
	var names []string
	seq, comments, obfuscated := 0, 0, 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ":"):
			comments++
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var ev struct {
				Type        string  `json:"type"`
				Seq         int     `json:"sequence_number"`
				Obfuscation *string `json:"obfuscation"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
				t.Fatalf("data line %q: %v", line, err)
			}
			if ev.Type != name {
				t.Errorf("event %q carries type %q", name, ev.Type)
			}
			if ev.Seq != seq {
				t.Errorf("event %q sequence_number = %d, want %d", name, ev.Seq, seq)
			}
			if ev.Obfuscation != nil {
				obfuscated++
			}
			seq++
			names = append(names, name)
		}
	}
	if comments != 1 || obfuscated == 0 {
		t.Errorf("comments = %d, obfuscated deltas = %d; want 1 and some", comments, obfuscated)
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.reasoning_summary_part.added"}
	if len(names) < len(want) || strings.Join(names[:len(want)], " ") != strings.Join(want, " ") || names[len(names)-1] != "response.completed" {
		t.Errorf("events = %v, want %v … response.completed", names, want)
	}
}

func TestFakeStops(t *testing.T) {
	for _, tt := range []struct {
		name  string
		turn  fakemodel.Turn
		stop  model.StopReason
		calls int
		text  string
	}{
		{"max tokens cuts the last call", fakemodel.Turn{Text: "ok", Stop: "max_tokens", ToolCalls: []fakemodel.ToolCall{
			{Name: "bash", Args: `{"command":"pwd"}`}, {Name: "bash", Args: `{"command":"cat /etc/hosts"}`}}}, model.StopMaxTokens, 1, "ok"},
		{"max tokens cuts the message", fakemodel.Turn{Text: "Step 1", Stop: "max_tokens"}, model.StopMaxTokens, 0, "Step 1"},
		{"refusal", fakemodel.Turn{Text: "I can't", Stop: "refusal"}, model.StopRefusal, 0, "I can't"},
		{"empty answer", fakemodel.Turn{}, model.StopEnd, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := run(t, client(startFake(t, tt.turn), 1), model.Request{Model: "m"})
			if o.err != nil {
				t.Fatal(o.err)
			}
			if o.done.Stop != tt.stop || len(o.done.Message.ToolCalls()) != tt.calls || o.done.Message.Text() != tt.text {
				t.Errorf("Done = %s, %d calls, %q; want %s, %d, %q", o.done.Stop, len(o.done.Message.ToolCalls()), o.done.Message.Text(), tt.stop, tt.calls, tt.text)
			}
		})
	}
}

func TestFakeRetry(t *testing.T) {
	for _, tt := range []struct {
		name    string
		first   fakemodel.Turn
		delay   time.Duration // the wait the notice announces; 0 means not checked
		retried bool
	}{
		{"500 is retried", fakemodel.Turn{Status: 500, ErrorType: "server_error"}, 0, true},
		{"429 honours retry-after-ms", fakemodel.Turn{Status: 429, ErrorType: "rate_limit_exceeded", RetryAfterMs: "20"}, 20 * time.Millisecond, true},
		{"400 is not retried", fakemodel.Turn{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "bad"}, 0, false},
		{"mid-stream failure is not retried", fakemodel.Turn{Text: "partial", MidStreamError: "server_error"}, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startFake(t, tt.first, fakemodel.Turn{Text: "recovered"})
			o := run(t, client(srv, 3), model.Request{Model: "m"})
			if !tt.retried {
				var pe *model.ProviderError
				if !errors.As(o.err, &pe) || len(o.notices) != 0 || srv.Served() != 1 {
					t.Fatalf("Stream = %v after %d requests, %d notices; want one failed request", o.err, srv.Served(), len(o.notices))
				}
				if tt.first.MidStreamError != "" && (!pe.MidStream || pe.Type != "server_error") {
					t.Errorf("mid-stream error = %+v", pe)
				}
				return
			}
			if o.err != nil || o.text != "recovered" || len(o.notices) != 1 || srv.Served() != 2 {
				t.Fatalf("Stream = %q, %v after %d requests, %d notices; want recovered after one retry", o.text, o.err, srv.Served(), len(o.notices))
			}
			if tt.delay != 0 && o.notices[0].Delay != tt.delay {
				t.Errorf("retry delay = %s, want %s from retry-after-ms", o.notices[0].Delay, tt.delay)
			}
		})
	}
}

func TestFakeDrop(t *testing.T) {
	srv := startFake(t, fakemodel.Turn{Text: "half an ans", Drop: true}, fakemodel.Turn{Text: "unused"})
	o := run(t, client(srv, 3), model.Request{Model: "m"})
	if !errors.Is(o.err, model.ErrTruncatedStream) || o.done != nil {
		t.Fatalf("Stream after a dropped connection = %+v, want an error and no Done", o)
	}
	if srv.Served() != 1 {
		t.Errorf("a stream that had started was retried (%d requests)", srv.Served())
	}
}
