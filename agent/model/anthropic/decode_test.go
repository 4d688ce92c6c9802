package anthropic

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

// decodeFile decodes testdata/name and returns every chunk and the error.
func decodeFile(t *testing.T, name string) ([]model.Chunk, error) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []model.Chunk
	err = Protocol{}.Decode(model.Events(f, 0), func(c model.Chunk) bool {
		got = append(got, c)
		return true
	})
	return got, err
}

func thinkingPart(text, sig string) model.Part {
	return model.Part{Kind: model.KindThinking, Thinking: &model.Thinking{Protocol: Name, Text: text, Signature: sig}}
}

func callPart(id, name, input string) model.Part {
	return model.Part{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: id, Name: name, Input: json.RawMessage(input)}}
}

func assistant(parts ...model.Part) model.Message {
	return model.Message{Role: model.Assistant, Parts: parts}
}

func TestDecode(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []model.Chunk
	}{
		{"text.sse", []model.Chunk{
			model.TextDelta{Text: "Hello"},
			model.TextDelta{Text: " there!"},
			model.Done{Message: assistant(model.TextPart("Hello there!")), Stop: model.StopEnd, Usage: model.Usage{Input: 11, Output: 6}},
		}},
		{"tool_use.sse", []model.Chunk{
			model.TextDelta{Text: "I'll check the weather."},
			model.ToolCallStart{Index: 0, ID: "toolu_01NR", Name: "get_weather"},
			model.ToolCallDelta{Index: 0, Args: `{"locati`},
			model.ToolCallDelta{Index: 0, Args: `on": "San Fra`},
			model.ToolCallDelta{Index: 0, Args: `ncisco, CA", "un`},
			model.ToolCallDelta{Index: 0, Args: `it": "fahrenhe`},
			model.ToolCallDelta{Index: 0, Args: `is"}`},
			model.Done{
				Message: assistant(model.TextPart("I'll check the weather."),
					callPart("toolu_01NR", "get_weather", `{"location": "San Francisco, CA", "unit": "fahrenheis"}`)),
				Stop:  model.StopToolUse,
				Usage: model.Usage{Input: 400, Output: 65},
			},
		}},
		{"parallel_tools.sse", []model.Chunk{
			model.ToolCallStart{Index: 0, ID: "toolu_A", Name: "bash"},
			model.ToolCallDelta{Index: 0, Args: `{"command":`},
			model.ToolCallDelta{Index: 0, Args: ` "ls"}`},
			model.ToolCallStart{Index: 1, ID: "toolu_B", Name: "clock"},
			model.Done{
				Message: assistant(callPart("toolu_A", "bash", `{"command": "ls"}`), callPart("toolu_B", "clock", `{}`)),
				Stop:    model.StopToolUse,
				Usage:   model.Usage{Input: 50, Output: 40},
			},
		}},
		{"thinking.sse", []model.Chunk{
			model.ThinkingDelta{Text: "Simple educ"},
			model.ThinkingDelta{Text: "ational question."},
			model.TextDelta{Text: "Paris."},
			model.Done{
				Message: assistant(thinkingPart("Simple educational question.", "EqQBfinal=="), model.TextPart("Paris.")),
				Stop:    model.StopEnd,
				Usage:   model.Usage{Input: 20, Output: 30, Reasoning: 22},
			},
		}},
		{"redacted_thinking.sse", []model.Chunk{
			model.TextDelta{Text: "Done."},
			model.Done{
				Message: assistant(model.Part{Kind: model.KindThinking, Thinking: &model.Thinking{Protocol: Name, Redacted: "EmwKAhgBEgy"}}, model.TextPart("Done.")),
				Stop:    model.StopEnd,
				Usage:   model.Usage{Input: 20, Output: 9},
			},
		}},
		{"max_tokens_tool.sse", []model.Chunk{
			model.TextDelta{Text: "Step 2: rea"},
			model.ToolCallStart{Index: 0, ID: "toolu_ok", Name: "bash"},
			model.ToolCallDelta{Index: 0, Args: `{"command":"pwd"}`},
			model.ToolCallStart{Index: 1, ID: "toolu_bad", Name: "bash"},
			model.ToolCallDelta{Index: 1, Args: `{"command":"cat fi`},
			model.ToolCallStart{Index: 2, ID: "toolu_cut", Name: "bash"},
			model.ToolCallDelta{Index: 2, Args: `{"comm`},
			model.Done{
				// The complete call survives; the unparseable and the unfinished ones do not.
				Message: assistant(model.TextPart("Step 2: rea"), callPart("toolu_ok", "bash", `{"command":"pwd"}`)),
				Stop:    model.StopMaxTokens,
				Usage:   model.Usage{Input: 30, Output: 16},
			},
		}},
		{"tolerant.sse", []model.Chunk{
			model.TextDelta{Text: "Still here."},
			model.Done{Message: assistant(model.TextPart("Still here.")), Stop: model.StopEnd, Usage: model.Usage{Input: 5, Output: 3}},
		}},
		{"usage_cache.sse", []model.Chunk{
			model.TextDelta{Text: "Cached."},
			model.Done{
				Message: assistant(model.TextPart("Cached.")),
				Stop:    model.StopEnd,
				Usage:   model.Usage{Input: 12 + 300 + 5400, Output: 106, CacheRead: 5400, CacheWrite: 300, Reasoning: 67},
			},
		}},
		{"refusal.sse", []model.Chunk{
			model.TextDelta{Text: "I can't help with that."},
			model.Done{Message: assistant(model.TextPart("I can't help with that.")), Stop: model.StopRefusal, Usage: model.Usage{Input: 10, Output: 8}},
		}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			got, err := decodeFile(t, tt.file)
			if err != nil {
				t.Fatalf("Decode(%s) error = %v", tt.file, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode(%s) =\n%s\nwant\n%s", tt.file, dump(got), dump(tt.want))
			}
		})
	}
}

func dump(cs []model.Chunk) string {
	var b strings.Builder
	for _, c := range cs {
		j, _ := json.Marshal(c)
		b.WriteString(reflect.TypeOf(c).Name() + " " + string(j) + "\n")
	}
	return b.String()
}

func TestDecodeErrors(t *testing.T) {
	t.Run("error event", func(t *testing.T) {
		got, err := decodeFile(t, "error_event.sse")
		var pe *model.ProviderError
		if !errors.As(err, &pe) {
			t.Fatalf("Decode error = %v, want *model.ProviderError", err)
		}
		want := &model.ProviderError{MidStream: true, Type: "overloaded_error", Message: "Overloaded", Retryable: true}
		if !reflect.DeepEqual(pe, want) {
			t.Errorf("Decode error = %#v, want %#v", pe, want)
		}
		if len(got) != 1 || got[0] != (model.TextDelta{Text: "Partial"}) {
			t.Errorf("Decode chunks = %s, want the partial text and no Done", dump(got))
		}
	})
	t.Run("truncated", func(t *testing.T) {
		got, err := decodeFile(t, "truncated.sse")
		if !errors.Is(err, model.ErrTruncatedStream) {
			t.Fatalf("Decode error = %v, want ErrTruncatedStream", err)
		}
		for _, c := range got {
			if _, ok := c.(model.Done); ok {
				t.Errorf("Decode yielded Done on a truncated stream")
			}
		}
	})
	t.Run("before message_start", func(t *testing.T) {
		_, err := decodeFile(t, "before_start.sse")
		if err == nil || !strings.Contains(err.Error(), "before message_start") {
			t.Fatalf("Decode error = %v, want one about message_start", err)
		}
	})
	t.Run("read error", func(t *testing.T) {
		r := &failingReader{data: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"}
		err := Protocol{}.Decode(model.Events(r, 0), func(model.Chunk) bool { return true })
		if !errors.Is(err, model.ErrTruncatedStream) || !errors.Is(err, errBroken) {
			t.Fatalf("Decode error = %v, want ErrTruncatedStream wrapping the read error", err)
		}
	})
	t.Run("invalid tool JSON at tool_use", func(t *testing.T) {
		stream := sse(
			`{"type":"message_start","message":{"usage":{}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"bash","input":{}}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}`,
			`{"type":"message_stop"}`,
		)
		err := Protocol{}.Decode(model.Events(strings.NewReader(stream), 0), func(model.Chunk) bool { return true })
		if err == nil || !strings.Contains(err.Error(), "invalid input JSON") {
			t.Fatalf("Decode error = %v, want invalid input JSON", err)
		}
	})
}

func TestDecodeStopsWhenConsumerStops(t *testing.T) {
	f, err := os.Open("testdata/text.sse")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	err = Protocol{}.Decode(model.Events(f, 0), func(model.Chunk) bool { n++; return false })
	if err != nil || n != 1 {
		t.Fatalf("Decode after yield false: err = %v, chunks = %d; want nil, 1", err, n)
	}
}

func TestStopReason(t *testing.T) {
	for in, want := range map[string]model.StopReason{
		"end_turn":                      model.StopEnd,
		"stop_sequence":                 model.StopEnd,
		"tool_use":                      model.StopToolUse,
		"max_tokens":                    model.StopMaxTokens,
		"refusal":                       model.StopRefusal,
		"pause_turn":                    model.StopPause,
		"model_context_window_exceeded": model.StopContext,
		"something_new":                 model.StopOther,
	} {
		if got := stopReason(in); got != want {
			t.Errorf("stopReason(%q) = %q, want %q", in, got, want)
		}
	}
}

// sse frames each JSON payload as an event named by its type.
func sse(payloads ...string) string {
	var b strings.Builder
	for _, p := range payloads {
		var v struct{ Type string }
		_ = json.Unmarshal([]byte(p), &v)
		b.WriteString("event: " + v.Type + "\ndata: " + p + "\n\n")
	}
	return b.String()
}

var errBroken = errors.New("connection reset")

type failingReader struct{ data string }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, errBroken
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}
