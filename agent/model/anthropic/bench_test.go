package anthropic_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/agent/model/anthropic"
)

// benchStream is an anthropic stream of n one-word text deltas and a tool call whose
// arguments come in n fragments, the shape of a long answer streamed token by token.
func benchStream(n int) string {
	var b strings.Builder
	ev := func(typ, data string) { fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ, data) }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":10,"output_tokens":1}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	for range n {
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word "}}`)
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"bash","input":{}}}`)
	ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\":\""}}`)
	for range n {
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"echo "}}`)
	}
	ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"}"}}`)
	ev("content_block_stop", `{"type":"content_block_stop","index":1}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":99}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	return b.String()
}

// BenchmarkStream measures one long streamed response through model.Client over loopback
// HTTP: SSE framing, the bounds and timeouts, and anthropic decoding and assembly.
func BenchmarkStream(b *testing.B) {
	body := benchStream(20000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(body))
	}))
	defer srv.Close()
	c := &model.Client{Protocol: anthropic.Protocol{}, BaseURL: srv.URL, Retry: model.RetryPolicy{MaxAttempts: 1},
		HeaderTimeout: 2 * time.Minute, IdleTimeout: 5 * time.Minute} // the defaults: their timers are on the hot path

	req := model.Request{Model: "m", MaxOutputTokens: 1024, Messages: []model.Message{{Role: model.User, Parts: []model.Part{model.TextPart("hi")}}}}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var done model.Done
		for ch, err := range c.Stream(b.Context(), req) {
			if err != nil {
				b.Fatal(err)
			}
			if d, ok := ch.(model.Done); ok {
				done = d
			}
		}
		if len(done.Message.ToolCalls()) != 1 {
			b.Fatalf("Done = %+v, want one tool call", done)
		}
	}
}
