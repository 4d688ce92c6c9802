package completions

import (
	"encoding/json"
	"reflect"
	"testing"

	"myco.dev/agent/model"
)

func resultPart(r model.ToolResult) model.Part {
	return model.Part{Kind: model.KindToolResult, ToolResult: &r}
}

func user(parts ...model.Part) model.Message { return model.Message{Role: model.User, Parts: parts} }

// sameJSON reports whether a and b encode the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("unmarshal %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func TestEncodeEnvelope(t *testing.T) {
	req := model.Request{
		Model: "gpt-5", System: "Be brief.", MaxOutputTokens: 8192, Thinking: "effort", Effort: "high", CacheKey: "s1",
		Messages: []model.Message{user(model.TextPart("hi"))},
		Tools:    []model.ToolSpec{{Name: "bash", Description: "Run a command.", Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}, {Name: "noop"}},
	}
	got, err := Protocol{}.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"gpt-5","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":8192,
	 "messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],
	 "tools":[{"type":"function","function":{"name":"bash","description":"Run a command.","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}},
	          {"type":"function","function":{"name":"noop","parameters":{"type":"object","properties":{}}}}],
	 "tool_choice":"auto","parallel_tool_calls":true,"reasoning_effort":"high","prompt_cache_key":"s1"}`
	if !sameJSON(t, got, []byte(want)) {
		t.Errorf("Encode =\n%s\nwant\n%s", got, want)
	}
}

func TestEncodeReasoningEffort(t *testing.T) {
	for _, tt := range []struct {
		thinking, effort, want string
	}{
		{"effort", "low", "low"},
		{"", "medium", "medium"},
		{"none", "high", ""},
		{"effort", "", ""},
		{"", "", ""},
	} {
		got, err := Protocol{}.Encode(model.Request{Model: "m", Thinking: tt.thinking, Effort: tt.effort, Messages: []model.Message{user(model.TextPart("hi"))}})
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if err := json.Unmarshal(got, &body); err != nil {
			t.Fatal(err)
		}
		effort, present := body["reasoning_effort"]
		if tt.want == "" && present {
			t.Errorf("Encode(thinking %q, effort %q) sent reasoning_effort %v, want none", tt.thinking, tt.effort, effort)
		}
		if tt.want != "" && effort != tt.want {
			t.Errorf("Encode(thinking %q, effort %q) reasoning_effort = %v, want %q", tt.thinking, tt.effort, effort, tt.want)
		}
		if _, ok := body["max_tokens"]; ok {
			t.Errorf("Encode sent max_tokens")
		}
		if _, ok := body["tools"]; ok {
			t.Errorf("Encode without tools sent tools")
		}
		if _, ok := body["tool_choice"]; ok {
			t.Errorf("Encode without tools sent tool_choice")
		}
	}
}

func TestEncodeMessages(t *testing.T) {
	img := model.Image{MediaType: "image/png", Data: "iVBORw0KGgo="}
	req := model.Request{Model: "deepseek-reasoner", Messages: []model.Message{
		user(model.TextPart("look"), model.Part{Kind: model.KindImage, Image: &img}),
		asst(thinkingPart("just chat"), model.TextPart("Sure.")),
		user(model.TextPart("run it"), model.SystemPart("runtime", "<system-reminder>cwd is /w</system-reminder>")),
		asst(thinkingPart("I should list "), thinkingPart("and view."), model.TextPart("Checking."),
			callPart("call_1", "bash", `{"command":"ls"}`), callPart("call_2", "view_image", `{"path":"a.png"}`)),
		user(
			resultPart(model.ToolResult{CallID: "call_1", Text: "a.png\n"}),
			resultPart(model.ToolResult{CallID: "call_2", Images: []model.Image{img}}),
			model.SystemPart("notice", "Note: 1 file."),
		),
		asst(model.Part{Kind: model.KindThinking, Thinking: &model.Thinking{Protocol: "anthropic-messages", Text: "elsewhere", Signature: "sig"}},
			callPart("call_3", "bash", ``)),
		user(resultPart(model.ToolResult{CallID: "call_3", Unknown: true})),
		user(),
		asst(thinkingPart("only thinking")),
		user(model.TextPart("")),
		user(model.TextPart("thanks")),
	}}
	got, err := Protocol{}.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(got, &body); err != nil {
		t.Fatal(err)
	}
	want := `[
	 {"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},
	 {"role":"assistant","content":"Sure."},
	 {"role":"user","content":"run it\n\n<system-reminder>cwd is /w</system-reminder>"},
	 {"role":"assistant","content":"Checking.","reasoning_content":"I should list and view.","tool_calls":[
	   {"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}},
	   {"id":"call_2","type":"function","function":{"name":"view_image","arguments":"{\"path\":\"a.png\"}"}}]},
	 {"role":"tool","tool_call_id":"call_1","content":"a.png\n"},
	 {"role":"tool","tool_call_id":"call_2","content":"(the result's images follow in the next user message)"},
	 {"role":"user","content":[{"type":"text","text":"Images from the result of tool call call_2 (view_image):"},
	   {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},
	   {"type":"text","text":"Note: 1 file."}]},
	 {"role":"assistant","content":null,"tool_calls":[{"id":"call_3","type":"function","function":{"name":"bash","arguments":"{}"}}]},
	 {"role":"tool","tool_call_id":"call_3","content":"The outcome of this tool call is unknown: its result was never observed, so it may or may not have taken effect."},
	 {"role":"user","content":"thanks"}
	]`
	if !sameJSON(t, body.Messages, []byte(want)) {
		t.Errorf("Encode messages =\n%s\nwant\n%s", body.Messages, want)
	}
}

func TestEncodeSystemWithToolResults(t *testing.T) {
	req := model.Request{Model: "m", Messages: []model.Message{
		asst(callPart("c1", "bash", `{}`)),
		user(model.SystemPart("runtime", "Time is up soon."), resultPart(model.ToolResult{CallID: "c1", Text: "ok", IsError: true})),
	}}
	got, err := Protocol{}.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(got, &body); err != nil {
		t.Fatal(err)
	}
	var roles []any
	for _, m := range body.Messages {
		roles = append(roles, m["role"])
	}
	if want := []any{"assistant", "tool", "user"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	if c := body.Messages[2]["content"]; c != "Time is up soon." {
		t.Errorf("system text after the tool messages = %v, want %q", c, "Time is up soon.")
	}
}

func TestHeader(t *testing.T) {
	h := make(map[string][]string)
	Protocol{}.Header(h, "")
	if len(h) != 0 {
		t.Errorf("Header with no key set %v", h)
	}
	Protocol{}.Header(h, "sk-1")
	if got := h["Authorization"]; len(got) != 1 || got[0] != "Bearer sk-1" {
		t.Errorf("Authorization = %v, want Bearer sk-1", got)
	}
}
