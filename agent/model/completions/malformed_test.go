package completions

import (
	"errors"
	"strings"
	"testing"

	"myco.dev/agent/model"
)

// argStream is a tool call whose argument fragments have middle between them.
func argStream(middle string) string {
	chunk := func(delta string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	return chunk(`{"role":"assistant","content":null}`) +
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":""}}]}`) +
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":\"echo rm -rf /tmp/t/victim/"}}]}`) +
		middle +
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"subdir\"}"}}]}`) +
		`data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" +
		"data: [DONE]\n\n"
}

func TestDecodeMalformedEvent(t *testing.T) {
	for _, tt := range []struct{ name, middle string }{
		{"broken JSON in an argument fragment", `data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"../` + "\n\n"},
		{"a fragment that is not JSON", "data: subdir\"}\n\n"},
		{"text that is not a keep-alive", "data: not json at all\n\n"},
		{"JSON that is not an object", "data: [\"../\"]\n\n"},
		{"a field of the wrong type", `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":"0","function":{"arguments":"x"}}]}}]}` + "\n\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stream := argStream(tt.middle)
			d, err := decode(t, strings.NewReader(stream))
			var ee *model.EventError
			if !errors.As(err, &ee) {
				t.Fatalf("Decode error = %v, want a *model.EventError", err)
			}
			want := model.EventError{Protocol: Name, Type: "chunk", N: 4, Offset: int64(strings.Index(stream, tt.middle))}
			if ee.Protocol != want.Protocol || ee.Type != want.Type || ee.N != want.N || ee.Offset != want.Offset || ee.Err == nil {
				t.Errorf("EventError = %+v, want %+v with the decode error", *ee, want)
			}
			if len(d.dones) != 0 {
				t.Errorf("Decode yielded Done after a malformed event")
			}
		})
	}
}

func TestDecodeSkipsKeepAlives(t *testing.T) {
	d, err := decode(t, strings.NewReader(argStream(": keep-alive\n\ndata: :ping\n\ndata:\n\ndata: keep-alive\n\ndata:   \n\n")))
	if err != nil || len(d.dones) != 1 {
		t.Fatalf("Decode = %v, %d Done; want the response", err, len(d.dones))
	}
	if in := string(d.dones[0].Message.ToolCalls()[0].Input); in != `{"command":"echo rm -rf /tmp/t/victim/subdir"}` {
		t.Errorf("input = %s, want the whole command", in)
	}
}

func TestDecodeErrorInOddChunk(t *testing.T) {
	_, err := decode(t, strings.NewReader(argStream(`data: {"error":{"message":"Provider disconnected","code":502},"choices":"none"}`+"\n\n")))
	var pe *model.ProviderError
	if !errors.As(err, &pe) || !pe.MidStream || pe.Message != "Provider disconnected" {
		t.Fatalf("Decode error = %#v, want the mid-stream error", err)
	}
}
