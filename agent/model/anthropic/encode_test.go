package anthropic

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"myco.dev/agent/model"
)

// encode returns the body Encode produces for req, decoded generically.
func encode(t *testing.T, req model.Request) map[string]any {
	t.Helper()
	b, err := Protocol{}.Encode(req)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("Encode produced invalid JSON %s: %v", b, err)
	}
	return m
}

// sameJSON fails unless got, re-encoded, equals the JSON text want.
func sameJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON for %s: %v", what, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("%s =\n%s\nwant\n%s", what, g, want)
	}
}

func user(parts ...model.Part) model.Message { return model.Message{Role: model.User, Parts: parts} }

func result(id, text string, images ...model.Image) model.Part {
	return model.Part{Kind: model.KindToolResult, ToolResult: &model.ToolResult{CallID: id, Text: text, Images: images}}
}

func TestEncodeEnvelope(t *testing.T) {
	got := encode(t, model.Request{
		Model:  "claude-test",
		System: "You are terse.",
		Tools: []model.ToolSpec{{
			Name: "bash", Description: "Run a command.",
			Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`),
		}},
		Messages: []model.Message{user(model.TextPart("hi"))},
		Effort:   "high",
	})
	sameJSON(t, "body", got, `{
		"model":"claude-test","max_tokens":8192,"stream":true,
		"system":[{"type":"text","text":"You are terse.","cache_control":{"type":"ephemeral"}}],
		"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}],
		"tools":[{"name":"bash","description":"Run a command.","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}],
		"tool_choice":{"type":"auto"},
		"thinking":{"type":"adaptive"},
		"output_config":{"effort":"high"}}`)
}

func TestEncodeThinkingModes(t *testing.T) {
	for _, tt := range []struct {
		name, mode string
		maxTokens  int
		want       any // the thinking field, or nil when absent
	}{
		{"default is adaptive", "", 0, map[string]any{"type": "adaptive"}},
		{"adaptive", "adaptive", 4000, map[string]any{"type": "adaptive"}},
		{"budget is half of max_tokens", "budget", 16000, map[string]any{"type": "enabled", "budget_tokens": 8000.0}},
		{"budget of default max_tokens", "budget", 0, map[string]any{"type": "enabled", "budget_tokens": 4096.0}},
		{"budget clamped to 1024", "budget", 1500, map[string]any{"type": "enabled", "budget_tokens": 1024.0}},
		{"budget just possible", "budget", 1025, map[string]any{"type": "enabled", "budget_tokens": 1024.0}},
		{"budget impossible", "budget", 1024, nil},
		{"none omits thinking", "none", 4000, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := encode(t, model.Request{Model: "m", MaxOutputTokens: tt.maxTokens, Thinking: tt.mode, Messages: []model.Message{user(model.TextPart("x"))}})
			th, ok := got["thinking"]
			if tt.want == nil {
				if ok {
					t.Errorf("Encode(Thinking %q) thinking = %v, want absent", tt.mode, th)
				}
				return
			}
			if !reflect.DeepEqual(th, tt.want) {
				t.Errorf("Encode(Thinking %q, max %d) thinking = %v, want %v", tt.mode, tt.maxTokens, th, tt.want)
			}
			if _, ok := got["output_config"]; ok {
				t.Errorf("output_config sent without an effort")
			}
		})
	}
	if _, err := (Protocol{}).Encode(model.Request{Thinking: "effort"}); err == nil {
		t.Errorf("Encode(Thinking %q) succeeded, want an error", "effort")
	}
}

func TestEncodeMessages(t *testing.T) {
	png := model.Image{MediaType: "image/png", Data: "iVBOR"}
	for _, tt := range []struct {
		name string
		in   []model.Message
		want string // the messages field
	}{
		{
			name: "thinking replayed first and in order, results first with images",
			in: []model.Message{
				user(model.TextPart("list files")),
				assistant(
					model.TextPart("Let me look."),
					thinkingPart("first", "sig1"),
					model.Part{Kind: model.KindThinking, Thinking: &model.Thinking{Protocol: Name, Redacted: "opaque"}},
					callPart("toolu_1", "bash", `{"command":"ls"}`),
				),
				user(model.TextPart("and here is a screenshot"), model.Part{Kind: model.KindImage, Image: &png}, result("toolu_1", "a.txt\n", png)),
			},
			want: `[
				{"role":"user","content":[{"type":"text","text":"list files"}]},
				{"role":"assistant","content":[
					{"type":"thinking","thinking":"first","signature":"sig1"},
					{"type":"redacted_thinking","data":"opaque"},
					{"type":"text","text":"Let me look."},
					{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"ls"}}]},
				{"role":"user","content":[
					{"type":"tool_result","tool_use_id":"toolu_1","is_error":false,"content":[
						{"type":"text","text":"a.txt\n"},
						{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}]},
					{"type":"text","text":"and here is a screenshot"},
					{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"},"cache_control":{"type":"ephemeral"}}]}]`,
		},
		{
			name: "thinking from another protocol and unsigned thinking dropped",
			in: []model.Message{
				user(model.TextPart("q")),
				assistant(
					model.Part{Kind: model.KindThinking, Thinking: &model.Thinking{Protocol: "openai-responses", ID: "rs_1", Encrypted: "xx", Text: "hmm"}},
					model.Part{Kind: model.KindThinking, Thinking: &model.Thinking{Protocol: Name, Text: "cut off"}},
					model.TextPart("a"),
				),
				user(model.TextPart("thanks")),
			},
			want: `[
				{"role":"user","content":[{"type":"text","text":"q"}]},
				{"role":"assistant","content":[{"type":"text","text":"a"}]},
				{"role":"user","content":[{"type":"text","text":"thanks","cache_control":{"type":"ephemeral"}}]}]`,
		},
		{
			name: "system parts are text, empty text dropped, empty assistant skipped, roles merged",
			in: []model.Message{
				user(model.TextPart("q"), model.SystemPart("runtime", "It is Monday.")),
				assistant(model.TextPart(""), model.Part{Kind: model.KindThinking, Thinking: &model.Thinking{Protocol: "openai-completions", Text: "x"}}),
				user(model.TextPart("again"), model.TextPart("")),
			},
			want: `[{"role":"user","content":[
				{"type":"text","text":"q"},
				{"type":"text","text":"It is Monday."},
				{"type":"text","text":"again","cache_control":{"type":"ephemeral"}}]}]`,
		},
		{
			name: "merged user messages keep results first",
			in: []model.Message{
				user(model.TextPart("go")),
				assistant(callPart("t1", "bash", `{}`), callPart("t2", "bash", ``)),
				user(model.SystemPart("notice", "A file changed.")),
				user(result("t1", "one"), model.Part{Kind: model.KindToolResult, ToolResult: &model.ToolResult{CallID: "t2", Unknown: true}}),
			},
			want: `[
				{"role":"user","content":[{"type":"text","text":"go"}]},
				{"role":"assistant","content":[
					{"type":"tool_use","id":"t1","name":"bash","input":{}},
					{"type":"tool_use","id":"t2","name":"bash","input":{}}]},
				{"role":"user","content":[
					{"type":"tool_result","tool_use_id":"t1","is_error":false,"content":[{"type":"text","text":"one"}]},
					{"type":"tool_result","tool_use_id":"t2","is_error":true,"content":[{"type":"text","text":` + mustJSON(unknownOutcome) + `}]},
					{"type":"text","text":"A file changed.","cache_control":{"type":"ephemeral"}}]}]`,
		},
		{
			name: "failed result without output",
			in: []model.Message{
				user(model.TextPart("go")),
				assistant(callPart("t1", "bash", `{}`)),
				user(model.Part{Kind: model.KindToolResult, ToolResult: &model.ToolResult{CallID: "t1", IsError: true}}),
			},
			want: `[
				{"role":"user","content":[{"type":"text","text":"go"}]},
				{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"(no output)"}],"cache_control":{"type":"ephemeral"}}]}]`,
		},
		{
			name: "breakpoint skips the per-request context note, which the next request will not repeat",
			in: []model.Message{
				user(model.TextPart("go")),
				assistant(callPart("t1", "bash", `{}`)),
				user(result("t1", "one"), model.SystemPart("prelude", "[myco: Prelude changes] Added: a.md."), model.SystemPart(model.SystemContext, "[myco: context use] 10%")),
			},
			want: `[
				{"role":"user","content":[{"type":"text","text":"go"}]},
				{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]},
				{"role":"user","content":[
					{"type":"tool_result","tool_use_id":"t1","is_error":false,"content":[{"type":"text","text":"one"}]},
					{"type":"text","text":"[myco: Prelude changes] Added: a.md.","cache_control":{"type":"ephemeral"}},
					{"type":"text","text":"[myco: context use] 10%"}]}]`,
		},
		{
			name: "breakpoint skips a trailing thinking block",
			in: []model.Message{
				user(model.TextPart("q")),
				assistant(model.TextPart("a"), thinkingPart("t", "s")),
			},
			want: `[
				{"role":"user","content":[{"type":"text","text":"q"}]},
				{"role":"assistant","content":[
					{"type":"thinking","thinking":"t","signature":"s"},
					{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]}]`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := encode(t, model.Request{Model: "m", System: "sys", Messages: tt.in})
			sameJSON(t, "messages", got["messages"], tt.want)
			if n := breakpoints(got); n > 4 {
				t.Errorf("Encode set %d cache breakpoints, want at most 4", n)
			}
		})
	}
}

func TestEncodeEmpty(t *testing.T) {
	got := encode(t, model.Request{Model: "m", Thinking: "none"})
	sameJSON(t, "body", got, `{"model":"m","max_tokens":8192,"stream":true,"messages":[]}`)
}

func TestHeader(t *testing.T) {
	h := http.Header{}
	Protocol{}.Header(h, "")
	if h.Get("anthropic-version") != "2023-06-01" || h.Get("x-api-key") != "" {
		t.Errorf("Header(no key) = %v", h)
	}
	Protocol{}.Header(h, "sk-test")
	if h.Get("x-api-key") != "sk-test" {
		t.Errorf("Header(key) x-api-key = %q, want sk-test", h.Get("x-api-key"))
	}
	if p := (Protocol{}); p.Name() != "anthropic-messages" || p.Path() != "/v1/messages" {
		t.Errorf("Name, Path = %q, %q", p.Name(), p.Path())
	}
}

// breakpoints counts cache_control markers anywhere in v.
func breakpoints(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if k == "cache_control" {
				n++
			}
			n += breakpoints(e)
		}
	case []any:
		for _, e := range v {
			n += breakpoints(e)
		}
	}
	return n
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
