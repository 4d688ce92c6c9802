package agent

import (
	"errors"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/agent/model/anthropic"
	"myco.dev/agent/model/completions"
	"myco.dev/agent/model/responses"
	"myco.dev/internal/fakemodel"
)

// wire is one protocol as a hostile gateway speaks it: raw streams of a bash call whose
// command arrives in argument fragments.
type wire struct {
	name  string
	proto model.Protocol
	// head is the stream up to the call's first fragment, `{"command":"echo rm -rf /tmp/t/victim/`.
	head string
	// arg is one event carrying an argument fragment.
	arg func(frag string) string
	// broken is an argument event cut short, as a broken gateway might pass it on.
	broken string
	// tail is the fragment `subdir"}` and the end of a well-formed response.
	tail string
}

func sseEvent(name, data string) string {
	if name == "" {
		return "data: " + data + "\n\n"
	}
	return "event: " + name + "\ndata: " + data + "\n\n"
}

var wires = []wire{
	{
		name:  "anthropic-messages",
		proto: anthropic.Protocol{},
		head: sseEvent("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":5}}}`) +
			sseEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"bash","input":{}}}`) +
			sseEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"command\":\"echo rm -rf /tmp/t/victim/"}}`),
		arg: func(frag string) string {
			return sseEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"`+frag+`"}}`)
		},
		broken: sseEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_del`),
		tail: sseEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"subdir\"}"}}`) +
			sseEvent("content_block_stop", `{"type":"content_block_stop","index":0}`) +
			sseEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`) +
			sseEvent("message_stop", `{"type":"message_stop"}`),
	},
	{
		name:  "openai-responses",
		proto: responses.Protocol{},
		head: sseEvent("response.created", `{"type":"response.created","response":{"id":"r","status":"in_progress","output":[]}}`) +
			sseEvent("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"bash"}}`) +
			sseEvent("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\"command\":\"echo rm -rf /tmp/t/victim/"}`),
		arg: func(frag string) string {
			return sseEvent("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","output_index":0,"delta":"`+frag+`"}`)
		},
		broken: sseEvent("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","output_ind`),
		tail: sseEvent("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","output_index":0,"delta":"subdir\"}"}`) +
			sseEvent("response.output_item.done", `{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"command\":\"echo rm -rf /tmp/t/victim/\"}","call_id":"call_1","name":"bash"}}`) +
			sseEvent("response.completed", `{"type":"response.completed","response":{"id":"r","status":"completed","output":[],"usage":{"input_tokens":5,"output_tokens":9}}}`),
	},
	{
		name:  "openai-completions",
		proto: completions.Protocol{},
		head: sseEvent("", `{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}`) +
			sseEvent("", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":""}}]}}]}`) +
			sseEvent("", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":\"echo rm -rf /tmp/t/victim/"}}]}}]}`),
		arg: func(frag string) string {
			return sseEvent("", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"`+frag+`"}}]}}]}`)
		},
		broken: sseEvent("", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"argu`),
		tail: sseEvent("", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"subdir\"}"}}]}}]}`) +
			sseEvent("", `{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`) +
			"data: [DONE]\n\n",
	},
}

// hostileRun runs one turn of an agent against a fake model serving turns, with a client
// of w's protocol configured by c, and returns the run's error and the tools that ran.
// c.BaseURL is appended to the fake's URL.
func hostileRun(t *testing.T, w wire, c model.Client, turns ...fakemodel.Turn) (error, []string, *fakemodel.Server) {
	t.Helper()
	srv := fakemodel.New(t, turns...)
	c.Protocol = w.proto
	c.BaseURL = srv.URL + c.BaseURL
	if c.Retry.MaxAttempts == 0 {
		c.Retry = model.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Multiplier: 2}
	}
	tools := &fakeTools{}
	a := New(Options{Model: &c, Tools: tools, APIModel: "m", MaxOutputTokens: 1024, Log: testLog(t)})
	_, _, err := a.Run(t.Context(), []model.Message{userText("clean up")})
	return err, tools.called(), srv
}

func TestMalformedEventRunsNoTool(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			// The well-formed stream runs the call: the test would see a tool that ran.
			err, ran, _ := hostileRun(t, w, model.Client{}, fakemodel.Turn{Raw: []string{w.head, w.tail}}, fakemodel.Turn{Text: "done"})
			if err != nil || len(ran) != 1 {
				t.Fatalf("well-formed stream: Run = %v, tools ran %q; want one tool", err, ran)
			}

			err, ran, srv := hostileRun(t, w, model.Client{}, fakemodel.Turn{Raw: []string{w.head, w.broken, w.tail}})
			var ee *model.EventError
			if !errors.As(err, &ee) || ee.Protocol != w.name || ee.N != 4 {
				t.Fatalf("Run error = %v, want an EventError for event 4 of the %s stream", err, w.name)
			}
			if len(ran) != 0 {
				t.Errorf("tools ran %q from a response with a malformed event", ran)
			}
			if srv.Served() != 1 {
				t.Errorf("served %d requests, want 1", srv.Served())
			}
		})
	}
}

func TestEndlessStreamRunsNoTool(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			for _, tt := range []struct {
				name   string
				turn   fakemodel.Turn
				client model.Client
				event  bool
			}{
				{"endless argument fragments", fakemodel.Turn{Raw: []string{w.head}, Repeat: w.arg("x")}, model.Client{MaxResponseBytes: 256 << 10}, false},
				{"endless data lines", fakemodel.Turn{Raw: []string{w.head, "data: {"}, Repeat: "data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"}, model.Client{MaxEventBytes: 64 << 10}, true},
			} {
				t.Run(tt.name, func(t *testing.T) {
					err, ran, _ := hostileRun(t, w, tt.client, tt.turn)
					var tl *model.ResponseTooLargeError
					if !errors.As(err, &tl) || tl.Event != tt.event {
						t.Fatalf("Run error = %v, want a ResponseTooLargeError (event %v)", err, tt.event)
					}
					if len(ran) != 0 {
						t.Errorf("tools ran %q from an endless response", ran)
					}
				})
			}
		})
	}
}

func TestDuplicateCallIDsDoNotBrickTheSession(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			err, ran, srv := hostileRun(t, w, model.Client{},
				fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "dup", Name: "bash", Args: `{"command":"a"}`}, {ID: "dup", Name: "bash", Args: `{"command":"b"}`}}},
				fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "dup", Name: "bash", Args: `{"command":"c"}`}}},
				fakemodel.Turn{Text: "done"},
			)
			if err != nil {
				t.Fatalf("Run: %v (the provider refused a history with a repeated call id)", err)
			}
			if len(ran) != 3 || srv.Served() != 3 {
				t.Errorf("tools ran %q over %d requests, want 3 over 3", ran, srv.Served())
			}
		})
	}
}

func TestGatewayTimeouts(t *testing.T) {
	const short = 200 * time.Millisecond
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Run("silent before headers is retried", func(t *testing.T) {
				err, _, srv := hostileRun(t, w, model.Client{HeaderTimeout: short}, fakemodel.Turn{Silent: true}, fakemodel.Turn{Text: "ok"})
				if err != nil || srv.Served() != 2 {
					t.Fatalf("Run = %v after %d requests, want success after one retry", err, srv.Served())
				}
			})
			t.Run("stalled mid-stream fails the step", func(t *testing.T) {
				err, ran, srv := hostileRun(t, w, model.Client{IdleTimeout: short},
					fakemodel.Turn{Text: "partial answer", ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"x"}`}}, Stall: true},
					fakemodel.Turn{Text: "never asked for"})
				var te *model.TimeoutError
				if !errors.As(err, &te) || te.Header || !strings.Contains(err.Error(), "stream_idle_timeout_secs") {
					t.Fatalf("Run error = %v, want an idle TimeoutError naming stream_idle_timeout_secs", err)
				}
				if len(ran) != 0 || srv.Served() != 1 {
					t.Errorf("tools ran %q, requests %d; want none and 1 (mid-stream is not retried)", ran, srv.Served())
				}
			})
		})
	}
}

func TestGatewayRedirectNotFollowed(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			elsewhere := fakemodel.New(t, fakemodel.Turn{Text: "stolen"})
			err, _, srv := hostileRun(t, w, model.Client{Key: func() (string, error) { return "sk-secret", nil }},
				fakemodel.Turn{Status: 307, Location: elsewhere.URL + "/collect?token=T0KEN"})
			if len(elsewhere.Requests()) != 0 {
				t.Fatalf("the redirect target got %d requests", len(elsewhere.Requests()))
			}
			var pe *model.ProviderError
			if !errors.As(err, &pe) || pe.Status != 307 || !strings.Contains(err.Error(), elsewhere.URL+"/collect") || strings.Contains(err.Error(), "T0KEN") {
				t.Fatalf("Run error = %v, want a 307 error naming the redacted Location", err)
			}
			if srv.Served() != 1 {
				t.Errorf("requests = %d, want 1: a redirect is not retried", srv.Served())
			}
		})
	}
}

func TestBaseURLQueryKept(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			err, _, srv := hostileRun(t, w, model.Client{BaseURL: "/?api-version=2024-10-21"}, fakemodel.Turn{Text: "ok"})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if r := srv.Requests()[0]; r.Query != "api-version=2024-10-21" {
				t.Errorf("request to %s with query %q, want the base_url's query", r.Path, r.Query)
			}
		})
	}
}
