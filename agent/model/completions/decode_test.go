package completions

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"myco.dev/agent/model"
)

// decoded is what a stream turned into, with the deltas joined so they can be checked
// against the final message.
type decoded struct {
	text, thinking string
	starts         []model.ToolCallStart
	args           map[int]string
	dones          []model.Done
}

func decode(t *testing.T, r io.Reader) (decoded, error) {
	t.Helper()
	d := decoded{args: map[int]string{}}
	err := Protocol{}.Decode(model.Events(r, 0), func(c model.Chunk) bool {
		if len(d.dones) > 0 {
			t.Errorf("chunk %#v after Done", c)
		}
		switch c := c.(type) {
		case model.TextDelta:
			d.text += c.Text
		case model.ThinkingDelta:
			d.thinking += c.Text
		case model.ToolCallStart:
			d.starts = append(d.starts, c)
		case model.ToolCallDelta:
			if c.Index >= len(d.starts) {
				t.Errorf("ToolCallDelta for index %d before its start", c.Index)
			}
			d.args[c.Index] += c.Args
		case model.Done:
			d.dones = append(d.dones, c)
		default:
			t.Errorf("unexpected chunk %#v", c)
		}
		return true
	})
	return d, err
}

func thinkingPart(s string) model.Part {
	return model.Part{Kind: model.KindThinking, Thinking: &model.Thinking{Protocol: Name, Text: s}}
}

func callPart(id, name, input string) model.Part {
	return model.Part{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: id, Name: name, Input: json.RawMessage(input)}}
}

func asst(parts ...model.Part) model.Message {
	return model.Message{Role: model.Assistant, Parts: parts}
}

func TestDecode(t *testing.T) {
	for _, tt := range []struct {
		file    string
		want    model.Done
		wantErr error // matched with errors.Is; a *ProviderError is matched by type
	}{
		{file: "text.sse", want: model.Done{
			Message: asst(model.TextPart("I'm sorry, Dave.")), Stop: model.StopEnd,
			Usage: model.Usage{Input: 14, Output: 30, CacheRead: 4},
		}},
		{file: "parallel_tools.sse", want: model.Done{
			Message: asst(
				callPart("call_JMW1", "GetWeatherArgs", `{"city": "Edinburgh"}`),
				callPart("call_DNYT", "get_stock_price", `{"ticker":"AAPL"}`),
			),
			Stop: model.StopToolUse, Usage: model.Usage{Input: 149, Output: 60},
		}},
		{file: "ollama_whole.sse", want: model.Done{
			Message: asst(thinkingPart("Need files."), callPart("call_a1", "bash", `{"command":"ls"}`), callPart("call_b2", "view", `{}`)),
			Stop:    model.StopToolUse, Usage: model.Usage{Input: 20, Output: 9},
		}},
		{file: "no_index.sse", want: model.Done{
			Message: asst(callPart("call_x", "bash", `{"command":"pwd"}`), callPart("call_y", "bash", `{"command":"ls"}`), callPart("call_3", "noargs", `{}`)),
			Stop:    model.StopToolUse,
		}},
		{file: "reasoning_content.sse", want: model.Done{
			Message: asst(thinkingPart("We need to add."), model.TextPart("Answer: 4")), Stop: model.StopEnd,
			Usage: model.Usage{Input: 100, Output: 20, CacheRead: 64, Reasoning: 12},
		}},
		{file: "reasoning.sse", want: model.Done{
			Message: asst(thinkingPart("Thinking."), model.TextPart("Done.")), Stop: model.StopEnd,
			Usage: model.Usage{Input: 10, Output: 5, Reasoning: 3},
		}},
		{file: "think_inline.sse", want: model.Done{
			Message: asst(thinkingPart("Let me think. a<b ok"), model.TextPart("It is <b>4</b>.")), Stop: model.StopEnd,
		}},
		{file: "length_cut_tool.sse", want: model.Done{
			Message: asst(model.TextPart("Running both."), callPart("call_1", "bash", `{"command":"ls"}`)),
			Stop:    model.StopMaxTokens, Usage: model.Usage{Input: 79, Output: 40},
		}},
		{file: "stop_with_tools.sse", want: model.Done{
			Message: asst(callPart("abc", "bash", `{"command":"date"}`)), Stop: model.StopToolUse,
		}},
		{file: "usage_on_finish.sse", want: model.Done{
			Message: asst(model.TextPart("Hello")), Stop: model.StopEnd,
			Usage: model.Usage{Input: 31, Output: 2, CacheRead: 16},
		}},
		{file: "no_usage.sse", want: model.Done{Message: asst(model.TextPart("Hi.")), Stop: model.StopEnd}},
		{file: "finish_no_done.sse", want: model.Done{Message: asst(model.TextPart("Complete.")), Stop: model.StopEnd}},
		{file: "non_json.sse", want: model.Done{Message: asst(model.TextPart("Still here.")), Stop: model.StopRefusal}},
		{file: "midstream_error.sse", wantErr: &model.ProviderError{}},
		{file: "truncated.sse", wantErr: model.ErrTruncatedStream},
	} {
		t.Run(strings.TrimSuffix(tt.file, ".sse"), func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := decode(t, f)
			if tt.wantErr != nil {
				var pe *model.ProviderError
				if _, ok := tt.wantErr.(*model.ProviderError); ok && !errors.As(err, &pe) {
					t.Fatalf("Decode(%s) = %v, want a *ProviderError", tt.file, err)
				} else if !ok && !errors.Is(err, tt.wantErr) {
					t.Fatalf("Decode(%s) = %v, want %v", tt.file, err, tt.wantErr)
				}
				if len(got.dones) != 0 {
					t.Errorf("Decode(%s) yielded Done on failure", tt.file)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%s) = %v", tt.file, err)
			}
			if len(got.dones) != 1 {
				t.Fatalf("Decode(%s) yielded %d Done chunks, want 1", tt.file, len(got.dones))
			}
			done := got.dones[0]
			if !reflect.DeepEqual(done, tt.want) {
				t.Errorf("Decode(%s) Done =\n%s\nwant\n%s", tt.file, js(done), js(tt.want))
			}
			// The deltas must add up to the final message.
			if got.text != done.Message.Text() {
				t.Errorf("text deltas = %q, want %q", got.text, done.Message.Text())
			}
			var thinking string
			for _, p := range done.Message.Parts {
				if p.Kind == model.KindThinking {
					thinking += p.Thinking.Text
				}
			}
			if got.thinking != thinking {
				t.Errorf("thinking deltas = %q, want %q", got.thinking, thinking)
			}
			calls := done.Message.ToolCalls()
			for i, c := range calls {
				if i >= len(got.starts) || got.starts[i].ID != c.ID || got.starts[i].Name != c.Name || got.starts[i].Index != i {
					t.Errorf("ToolCallStart %d = %+v, want %s %s", i, got.starts, c.ID, c.Name)
					continue
				}
				if a := got.args[i]; a != string(c.Input) && !(a == "" && string(c.Input) == "{}") {
					t.Errorf("args deltas for %d = %q, want %s", i, a, c.Input)
				}
			}
		})
	}
}

func TestDecodeMidStreamError(t *testing.T) {
	f, err := os.Open("testdata/midstream_error.sse")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := decode(t, f)
	var pe *model.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("Decode = %v, want *ProviderError", err)
	}
	want := &model.ProviderError{MidStream: true, Type: "server_error", Message: "upstream overloaded", Retryable: true}
	if !reflect.DeepEqual(pe, want) {
		t.Errorf("Decode error = %+v, want %+v", pe, want)
	}
	if got.text != "Partial" {
		t.Errorf("text before the error = %q, want %q", got.text, "Partial")
	}
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
		t.Errorf("Decode with a consumer that stops = %v after %d chunks, want nil after 1", err, n)
	}
}

func TestThinkSplitter(t *testing.T) {
	for _, tt := range []struct {
		name           string
		deltas         []string
		thinking, text string
	}{
		{"no tags", []string{"Hel", "lo"}, "", "Hello"},
		{"tag later is text", []string{"a <think>b</think>"}, "", "a <think>b</think>"},
		{"whole", []string{"<think>x</think>y"}, "x", "y"},
		{"byte by byte", strings.Split("<think>x</think>\ny", ""), "x", "y"},
		{"prefix then not", []string{"<th", "ing>"}, "", "<thing>"},
		{"unclosed", []string{"<think>abc</thi"}, "abc</thi", ""},
		{"only partial open", []string{"<thi"}, "", "<thi"},
		{"leading space", []string{"  ", "<think>", "t", "</think>", "  ", "u"}, "t", "u"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s thinkSplitter
			var th, tx string
			for _, d := range tt.deltas {
				a, b := s.feed(d)
				th, tx = th+a, tx+b
			}
			a, b := s.flush()
			th, tx = th+a, tx+b
			if th != tt.thinking || tx != tt.text {
				t.Errorf("split %q = (%q, %q), want (%q, %q)", tt.deltas, th, tx, tt.thinking, tt.text)
			}
		})
	}
}

func js(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func TestDecodeErrorChunks(t *testing.T) {
	for _, tt := range []struct {
		name, data string
		want       *model.ProviderError
	}{
		{"openai", `{"error":{"message":"upstream overloaded","type":"server_error","param":null,"code":null}}`,
			&model.ProviderError{MidStream: true, Type: "server_error", Message: "upstream overloaded", Retryable: true}},
		{"code only", `{"error":{"message":"bad","code":"invalid_prompt"}}`,
			&model.ProviderError{MidStream: true, Type: "invalid_prompt", Message: "bad"}},
		{"openrouter numeric code", `{"id":"gen-1","object":"chat.completion.chunk","error":{"code":502,"message":"Provider disconnected"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`,
			&model.ProviderError{MidStream: true, Type: "502", Message: "Provider disconnected", Retryable: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decode(t, strings.NewReader("data: "+tt.data+"\n\n"))
			var pe *model.ProviderError
			if !errors.As(err, &pe) || !reflect.DeepEqual(pe, tt.want) {
				t.Errorf("Decode(%s) = %#v, want %#v", tt.data, err, tt.want)
			}
		})
	}
}
