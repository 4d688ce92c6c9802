package responses

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"myco.dev/agent/model"
)

// decoded is what a stream turned into.
type decoded struct {
	text, thinking string
	starts         []model.ToolCallStart
	args           map[int]string
	done           *model.Done
	dones          int
}

func decodeString(t *testing.T, src string) (decoded, error) {
	t.Helper()
	d := decoded{args: map[int]string{}}
	err := Protocol{}.Decode(model.Events(strings.NewReader(src), 0), func(c model.Chunk) bool {
		switch c := c.(type) {
		case model.TextDelta:
			d.text += c.Text
		case model.ThinkingDelta:
			d.thinking += c.Text
		case model.ToolCallStart:
			d.starts = append(d.starts, c)
		case model.ToolCallDelta:
			d.args[c.Index] += c.Args
		case model.Done:
			d.done = &c
			d.dones++
		default:
			t.Errorf("unexpected chunk %T", c)
		}
		return true
	})
	return d, err
}

func decodeFile(t *testing.T, name string) (decoded, error) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return decodeString(t, string(b))
}

func call(id, itemID, name, input string) model.Part {
	return model.Part{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: id, ItemID: itemID, Name: name, Input: json.RawMessage(input)}}
}

func TestDecode(t *testing.T) {
	for _, tt := range []struct {
		file     string
		text     string
		thinking string
		starts   []model.ToolCallStart
		args     map[int]string
		want     model.Done
	}{
		{
			file: "text.sse",
			text: "The final result is **570**.",
			want: model.Done{
				Message: model.Message{Role: model.Assistant, Parts: []model.Part{model.TextPart("The final result is **570**.")}},
				Stop:    model.StopEnd,
				Usage:   model.Usage{Input: 299, Output: 12},
			},
		},
		{
			file:   "function_call.sse",
			text:   "Let me add.",
			starts: []model.ToolCallStart{{Index: 0, ID: "call_AB6A", Name: "calculator"}},
			args:   map[int]string{0: `{"a":12,"b":7,"op":"add"}`},
			want: model.Done{
				Message: model.Message{Role: model.Assistant, Parts: []model.Part{
					model.TextPart("Let me add."),
					call("call_AB6A", "fc_0183a", "calculator", `{"a":12,"b":7,"op":"add"}`),
				}},
				Stop:  model.StopToolUse,
				Usage: model.Usage{Input: 80, Output: 20},
			},
		},
		{
			file:   "parallel_calls.sse",
			starts: []model.ToolCallStart{{Index: 0, ID: "call_1", Name: "bash"}, {Index: 1, ID: "call_2", Name: "view"}},
			args:   map[int]string{0: `{"command":"ls"}`},
			want: model.Done{
				Message: model.Message{Role: model.Assistant, Parts: []model.Part{
					call("call_1", "fc_1", "bash", `{"command":"ls"}`),
					call("call_2", "fc_2", "view", `{}`), // empty arguments mean none
				}},
				Stop:  model.StopToolUse,
				Usage: model.Usage{Input: 10, Output: 5},
			},
		},
		{
			file:     "reasoning.sse",
			thinking: "**Calculating**\n\nI'll add 12 and 7.",
			text:     "19",
			want: model.Done{
				Message: model.Message{Role: model.Assistant, Parts: []model.Part{
					{Kind: model.KindThinking, Thinking: &model.Thinking{
						Protocol:  "openai-responses",
						ID:        "rs_0183a",
						Encrypted: "gAAAAABpPDIV-complete-and-different", // from output_item.done, not added
						Summary:   []string{"**Calculating**", "I'll add 12 and 7."},
						Text:      "**Calculating**\n\nI'll add 12 and 7.",
					}},
					model.TextPart("19"),
				}},
				Stop:  model.StopEnd,
				Usage: model.Usage{Input: 5400, CacheRead: 5000, Output: 300, Reasoning: 256},
			},
		},
		{
			file:   "incomplete_max_tokens.sse",
			starts: []model.ToolCallStart{{Index: 0, ID: "call_a", Name: "bash"}, {Index: 1, ID: "call_b", Name: "bash"}},
			args:   map[int]string{0: `{"command":"pwd"}`, 1: `{"command":"cat /et`},
			want: model.Done{
				// The cut call never reached done and is dropped; the finished one stays.
				Message: model.Message{Role: model.Assistant, Parts: []model.Part{call("call_a", "fc_a", "bash", `{"command":"pwd"}`)}},
				Stop:    model.StopMaxTokens,
				Usage:   model.Usage{Input: 90, Output: 16},
			},
		},
		{
			file: "message_incomplete.sse",
			text: "Step 1: open the file. Step 2: rea",
			want: model.Done{
				Message: model.Message{Role: model.Assistant, Parts: []model.Part{model.TextPart("Step 1: open the file. Step 2: rea")}},
				Stop:    model.StopMaxTokens,
				Usage:   model.Usage{Input: 90, Output: 16},
			},
		},
		{
			file: "content_filter.sse",
			text: "I can",
			want: model.Done{
				Message: model.Message{Role: model.Assistant, Parts: []model.Part{model.TextPart("I can")}},
				Stop:    model.StopRefusal,
				Usage:   model.Usage{Input: 7, Output: 2},
			},
		},
	} {
		t.Run(tt.file, func(t *testing.T) {
			got, err := decodeFile(t, tt.file)
			if err != nil {
				t.Fatalf("Decode(%s) error = %v", tt.file, err)
			}
			if got.dones != 1 {
				t.Fatalf("Decode(%s) yielded %d Done, want 1", tt.file, got.dones)
			}
			if got.text != tt.text {
				t.Errorf("text = %q, want %q", got.text, tt.text)
			}
			if got.thinking != tt.thinking {
				t.Errorf("thinking = %q, want %q", got.thinking, tt.thinking)
			}
			if !reflect.DeepEqual(got.starts, tt.starts) {
				t.Errorf("starts = %+v, want %+v", got.starts, tt.starts)
			}
			if tt.args == nil {
				tt.args = map[int]string{}
			}
			if !reflect.DeepEqual(got.args, tt.args) {
				t.Errorf("args = %v, want %v", got.args, tt.args)
			}
			if !reflect.DeepEqual(*got.done, tt.want) {
				g, _ := json.Marshal(got.done)
				w, _ := json.Marshal(tt.want)
				t.Errorf("Done =\n%s\nwant\n%s", g, w)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tt := range []struct {
		file string
		want *model.ProviderError // nil means ErrTruncatedStream
	}{
		{"error_then_failed.sse", &model.ProviderError{MidStream: true, Type: "insufficient_quota",
			Message: "You exceeded your current quota, please check your plan and billing details."}},
		{"error_flat.sse", &model.ProviderError{MidStream: true, Type: "server_error",
			Message: "The server had an error while processing your request.", Retryable: true}},
		{"failed.sse", &model.ProviderError{MidStream: true, Type: "rate_limit_exceeded",
			Message: "Rate limit reached for gpt-5 on tokens per min. Please try again in 11.054s.", Retryable: true}},
		{"truncated.sse", nil},
	} {
		t.Run(tt.file, func(t *testing.T) {
			got, err := decodeFile(t, tt.file)
			if got.dones != 0 {
				t.Errorf("Decode(%s) yielded Done after a failure", tt.file)
			}
			if tt.want == nil {
				if !errors.Is(err, model.ErrTruncatedStream) {
					t.Fatalf("Decode(%s) = %v, want %v", tt.file, err, model.ErrTruncatedStream)
				}
				return
			}
			var pe *model.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("Decode(%s) = %v, want a *model.ProviderError", tt.file, err)
			}
			if !reflect.DeepEqual(pe, tt.want) {
				t.Errorf("Decode(%s) = %+v, want %+v", tt.file, pe, tt.want)
			}
		})
	}
}

// TestDecodeOutputFallback takes an item from the terminal response's output when its done
// event never arrived, and the done copy over the added one.
func TestDecodeOutputFallback(t *testing.T) {
	src := `event: response.output_item.added
data: {"type":"response.output_item.added","output_index":0,"item":{"id":"fc_x","type":"function_call","arguments":"","call_id":"call_x","name":"bash"}}

event: response.completed
data: {"type":"response.completed","response":{"status":"completed","output":[{"id":"fc_x","type":"function_call","status":"completed","arguments":"{\"command\":\"ls\"}","call_id":"call_x","name":"bash"}]}}

`
	got, err := decodeString(t, src)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.ToolCall{{ID: "call_x", ItemID: "fc_x", Name: "bash", Input: json.RawMessage(`{"command":"ls"}`)}}
	if calls := got.done.Message.ToolCalls(); !reflect.DeepEqual(calls, want) || got.done.Stop != model.StopToolUse {
		t.Errorf("Done = %+v, want calls %+v and tool_use", got.done, want)
	}
}

// TestDecodeStopEarly checks that Decode returns as soon as yield asks it to.
func TestDecodeStopEarly(t *testing.T) {
	b, err := os.ReadFile("testdata/text.sse")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = Protocol{}.Decode(model.Events(strings.NewReader(string(b)), 0), func(model.Chunk) bool { n++; return false })
	if err != nil || n != 1 {
		t.Errorf("Decode with a stopping yield: %d chunks, err %v; want 1, nil", n, err)
	}
}
