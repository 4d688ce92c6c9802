package responses

import (
	"errors"
	"strings"
	"testing"

	"myco.dev/agent/model"
)

// callStream is a function call whose argument deltas have middle between them.
func callStream(middle string) string {
	ev := func(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }
	return ev("response.created", `{"type":"response.created","response":{"id":"r","status":"in_progress","output":[]}}`) +
		ev("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"bash"}}`) +
		ev("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\"command\":\"echo rm -rf /tmp/t/victim/"}`) +
		middle +
		ev("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","output_index":0,"delta":"subdir\"}"}`) +
		ev("response.output_item.done", `{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"command\":\"echo rm -rf /tmp/t/victim/subdir\"}","call_id":"call_1","name":"bash"}}`) +
		ev("response.completed", `{"type":"response.completed","response":{"id":"r","status":"completed","output":[],"usage":{"input_tokens":5,"output_tokens":9}}}`)
}

func TestDecodeMalformedEvent(t *testing.T) {
	for _, tt := range []struct {
		name, middle, typ string
	}{
		{"broken JSON in an argument delta", "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"delta\":\"../\n\n", "response.function_call_arguments.delta"},
		{"broken JSON without an event name", "data: {\"type\":\"response.function_call_arguments.delta\",\"output_\n\n", ""},
		{"text that is not a keep-alive", "data: not json at all\n\n", ""},
		{"a field of the wrong type", "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":\"0\",\"item\":{\"type\":\"function_call\"}}\n\n", "response.output_item.done"},
		{"a known item type of the wrong shape", "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"type\":\"message\",\"content\":\"flat\"}}\n\n", "response.output_item.added"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stream := callStream(tt.middle)
			d, err := decodeString(t, stream)
			var ee *model.EventError
			if !errors.As(err, &ee) {
				t.Fatalf("Decode error = %v, want a *model.EventError", err)
			}
			want := model.EventError{Protocol: name, Type: tt.typ, N: 4, Offset: int64(strings.Index(stream, tt.middle))}
			if ee.Protocol != want.Protocol || ee.Type != want.Type || ee.N != want.N || ee.Offset != want.Offset || ee.Err == nil {
				t.Errorf("EventError = %+v, want %+v with the decode error", *ee, want)
			}
			if d.dones != 0 {
				t.Errorf("Decode yielded Done after a malformed event")
			}
		})
	}
}

func TestDecodeIgnoresWhatItDoesNotRead(t *testing.T) {
	for _, tt := range []struct{ name, middle string }{
		{"unknown event type, not JSON", "event: response.shiny.delta\ndata: <b>not json</b>\n\n"},
		{"unread event type, odd shape", "event: response.content_part.added\ndata: {\"type\":\"response.content_part.added\",\"output_index\":\"0\",\"part\":1}\n\n"},
		{"unknown item type, odd shape", "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"type\":\"web_search_call\",\"content\":\"flat\"}}\n\n"},
		{"keep-alive data", "data: :ping\n\ndata:\n\n"},
		{"comment", ": OPENROUTER PROCESSING\n\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := decodeString(t, callStream(tt.middle))
			if err != nil || d.done == nil {
				t.Fatalf("Decode = %v, Done %v; want the response", err, d.done)
			}
			if in := string(d.done.Message.ToolCalls()[0].Input); in != `{"command":"echo rm -rf /tmp/t/victim/subdir"}` {
				t.Errorf("input = %s, want the whole command", in)
			}
		})
	}
}

func TestDecodeErrorEventNotJSON(t *testing.T) {
	_, err := decodeString(t, "event: error\ndata: upstream connect error\n\n")
	var pe *model.ProviderError
	if !errors.As(err, &pe) || !pe.MidStream || pe.Message != "upstream connect error" {
		t.Fatalf("Decode error = %#v, want a mid-stream ProviderError with the text", err)
	}
}

func TestDecodeTerminalOutputItems(t *testing.T) {
	completed := func(output string) string {
		return "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":[" + output + "]}}\n\n"
	}
	t.Run("an item of an unknown type, odd shape, is ignored", func(t *testing.T) {
		d, err := decodeString(t, completed(`{"type":"shiny_call","content":"flat","summary":{"a":1}},{"type":"message","status":"completed","content":[{"type":"output_text","text":"hi"}]}`))
		if err != nil || d.done == nil || d.done.Message.Text() != "hi" {
			t.Fatalf("Decode = %v, Done %+v; want the message", err, d.done)
		}
	})
	t.Run("an item of a known type that does not decode fails", func(t *testing.T) {
		stream := completed(`{"type":"function_call","status":"completed","call_id":"c","name":"bash","arguments":{"command":"x"}}`)
		d, err := decodeString(t, stream)
		var ee *model.EventError
		if !errors.As(err, &ee) || ee.Type != "response.completed" || ee.N != 1 || !strings.Contains(err.Error(), "output[0] (function_call)") {
			t.Fatalf("Decode error = %v, want an EventError for the terminal event naming the item", err)
		}
		if d.dones != 0 {
			t.Errorf("Decode yielded Done")
		}
	})
}
