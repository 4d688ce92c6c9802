package anthropic

import (
	"errors"
	"strings"
	"testing"

	"myco.dev/agent/model"
)

// toolStream is a tool call whose arguments arrive in three deltas, with middle in place
// of the second delta event.
func toolStream(middle string) string {
	return sse(
		`{"type":"message_start","message":{"usage":{"input_tokens":5}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"bash","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"command\":\"echo rm -rf /tmp/t/victim/"}}`,
	) + middle + sse(
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"subdir\"}"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`,
		`{"type":"message_stop"}`,
	)
}

func TestDecodeMalformedEvent(t *testing.T) {
	for _, tt := range []struct {
		name, middle, typ string
	}{
		{"broken JSON in an argument delta", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"../../\n\n", "content_block_delta"},
		{"broken JSON without an event name", "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_\n\n", ""},
		{"text that is not a keep-alive", "data: not json at all\n\n", ""},
		{"a field of the wrong type", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":\"0\",\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"x\"}}\n\n", "content_block_delta"},
		{"a known type named only by the event line", "event: content_block_delta\ndata: [1,2]\n\n", "content_block_delta"},
		{"a broken ping", "event: ping\ndata: {\"type\": \"pi\n\n", "ping"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stream := toolStream(tt.middle)
			var got []model.Chunk
			err := Protocol{}.Decode(model.Events(strings.NewReader(stream), 0), func(c model.Chunk) bool {
				got = append(got, c)
				return true
			})
			var ee *model.EventError
			if !errors.As(err, &ee) {
				t.Fatalf("Decode error = %v, want a *model.EventError", err)
			}
			want := model.EventError{Protocol: Name, Type: tt.typ, N: 4, Offset: int64(strings.Index(stream, tt.middle))}
			if ee.Protocol != want.Protocol || ee.Type != want.Type || ee.N != want.N || ee.Offset != want.Offset || ee.Err == nil {
				t.Errorf("EventError = %+v, want %+v with the decode error", *ee, want)
			}
			for _, s := range []string{Name, "event 4", "at byte"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			for _, c := range got {
				if _, ok := c.(model.Done); ok {
					t.Errorf("Decode yielded Done after a malformed event")
				}
			}
		})
	}
}

func TestDecodeIgnoresWhatItDoesNotRead(t *testing.T) {
	for _, tt := range []struct{ name, middle string }{
		{"unknown event type, not JSON", "event: shiny_new_event\ndata: <b>not json</b>\n\n"},
		{"unknown event type, odd shape", "event: shiny_new_event\ndata: {\"type\":\"shiny_new_event\",\"index\":\"zero\"}\n\n"},
		{"unknown delta type, odd shape", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":\"0\",\"delta\":{\"type\":\"shiny_delta\"}}\n\n"},
		{"keep-alive data", "data: :ping\n\ndata:\n\ndata: keep-alive\n\n"},
		{"ping without data", "event: ping\ndata:\n\n"},
		{"comment", ": OPENROUTER PROCESSING\n\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var done *model.Done
			err := Protocol{}.Decode(model.Events(strings.NewReader(toolStream(tt.middle)), 0), func(c model.Chunk) bool {
				if d, ok := c.(model.Done); ok {
					done = &d
				}
				return true
			})
			if err != nil || done == nil {
				t.Fatalf("Decode = %v, Done %v; want the response", err, done)
			}
			if in := string(done.Message.ToolCalls()[0].Input); in != `{"command":"echo rm -rf /tmp/t/victim/subdir"}` {
				t.Errorf("input = %s, want the whole command", in)
			}
		})
	}
	t.Run("unknown block type, odd shape", func(t *testing.T) {
		stream := sse(`{"type":"message_start","message":{}}`) +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":\"0\",\"content_block\":{\"type\":\"server_tool_use\",\"name\":{\"x\":1}}}\n\n" +
			sse(`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`, `{"type":"message_stop"}`)
		err := Protocol{}.Decode(model.Events(strings.NewReader(stream), 0), func(model.Chunk) bool { return true })
		if err != nil {
			t.Fatalf("Decode = %v, want the unknown block ignored", err)
		}
	})
}

func TestDecodeErrorEventNotJSON(t *testing.T) {
	stream := sse(`{"type":"message_start","message":{}}`) + "event: error\ndata: upstream connect error\n\n"
	err := Protocol{}.Decode(model.Events(strings.NewReader(stream), 0), func(model.Chunk) bool { return true })
	var pe *model.ProviderError
	if !errors.As(err, &pe) || !pe.MidStream || pe.Message != "upstream connect error" {
		t.Fatalf("Decode error = %#v, want a mid-stream ProviderError with the text", err)
	}
}

func TestDecodeDeltaForTheWrongBlock(t *testing.T) {
	stream := sse(
		`{"type":"message_start","message":{}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"bash","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\":\"rm -rf /tmp/t/victim/"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"subdir"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"}"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"}}`,
		`{"type":"message_stop"}`,
	)
	err := Protocol{}.Decode(model.Events(strings.NewReader(stream), 0), func(model.Chunk) bool { return true })
	if err == nil || !strings.Contains(err.Error(), "input_json_delta for content block 0, which is a text block") {
		t.Fatalf("Decode error = %v, want one about the argument fragment sent to the text block", err)
	}
}

func TestDecodeServerToolDeltasIgnored(t *testing.T) {
	stream := sse(
		`{"type":"message_start","message":{}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"go\"}"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`,
		`{"type":"message_stop"}`,
	)
	err := Protocol{}.Decode(model.Events(strings.NewReader(stream), 0), func(model.Chunk) bool { return true })
	if err != nil {
		t.Fatalf("Decode = %v, want the server tool block ignored", err)
	}
}
