package responses

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"myco.dev/agent/model"
)

func encodeMap(t *testing.T, req model.Request) map[string]any {
	t.Helper()
	b, err := Protocol{}.Encode(req)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("Encode produced invalid JSON: %v\n%s", err, b)
	}
	return m
}

// jsonEqual reports whether got (decoded JSON) equals the JSON text want.
func jsonEqual(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON for %s: %v", what, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.MarshalIndent(got, "", "  ")
		ww, _ := json.MarshalIndent(w, "", "  ")
		t.Errorf("%s =\n%s\nwant\n%s", what, g, ww)
	}
}

func thinking(id, enc string, summary ...string) model.Part {
	return model.Part{Kind: model.KindThinking, Thinking: &model.Thinking{Protocol: "openai-responses", ID: id, Encrypted: enc, Summary: summary}}
}

func result(id, text string, images ...model.Image) model.Part {
	return model.Part{Kind: model.KindToolResult, ToolResult: &model.ToolResult{CallID: id, Text: text, Images: images}}
}

func TestEncodeEnvelope(t *testing.T) {
	m := encodeMap(t, model.Request{
		Model:           "gpt-5",
		System:          "be brief",
		Messages:        []model.Message{{Role: model.User, Parts: []model.Part{model.TextPart("hi")}}},
		Tools:           []model.ToolSpec{{Name: "bash", Description: "run", Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}, {Name: "noargs"}},
		MaxOutputTokens: 8192,
		Effort:          "high",
		CacheKey:        "sess-1",
	})
	jsonEqual(t, "request", m, `{
		"model":"gpt-5","stream":true,"store":false,"instructions":"be brief",
		"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}],
		"tools":[
			{"type":"function","name":"bash","description":"run","parameters":{"type":"object","properties":{"command":{"type":"string"}}},"strict":false},
			{"type":"function","name":"noargs","parameters":{"type":"object","properties":{}},"strict":false}],
		"tool_choice":"auto","parallel_tool_calls":true,
		"max_output_tokens":8192,
		"include":["reasoning.encrypted_content"],
		"reasoning":{"effort":"high","summary":"auto"},
		"prompt_cache_key":"sess-1"}`)
}

func TestEncodeThinkingNone(t *testing.T) {
	m := encodeMap(t, model.Request{Model: "m", Thinking: "none", Effort: "high"})
	for _, k := range []string{"reasoning", "include", "tools", "tool_choice", "parallel_tool_calls", "instructions", "prompt_cache_key"} {
		if v, ok := m[k]; ok {
			t.Errorf("Encode(Thinking none): %s = %v, want it absent", k, v)
		}
	}
	jsonEqual(t, "input", m["input"], `[]`)
	m = encodeMap(t, model.Request{Model: "m", Thinking: "effort"})
	jsonEqual(t, "reasoning", m["reasoning"], `{"summary":"auto"}`)
}

func TestEncodeInput(t *testing.T) {
	img := model.Image{MediaType: "image/png", Data: "iVBOR"}
	for _, tt := range []struct {
		name string
		msgs []model.Message
		want string
	}{
		{
			name: "reasoning replayed before the item it preceded",
			msgs: []model.Message{
				{Role: model.User, Parts: []model.Part{model.TextPart("add 12 and 7")}},
				{Role: model.Assistant, Parts: []model.Part{
					thinking("rs_1", "enc1", "**Adding**", "12+7"),
					model.TextPart("Let me use the calculator."),
					thinking("rs_2", "enc2"),
					{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: "call_1", ItemID: "fc_1", Name: "calculator", Input: json.RawMessage(`{"a":12}`)}},
				}},
				{Role: model.User, Parts: []model.Part{result("call_1", "19")}},
			},
			want: `[
				{"type":"message","role":"user","content":[{"type":"input_text","text":"add 12 and 7"}]},
				{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"**Adding**"},{"type":"summary_text","text":"12+7"}],"encrypted_content":"enc1"},
				{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me use the calculator."}]},
				{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"enc2"},
				{"type":"function_call","call_id":"call_1","name":"calculator","arguments":"{\"a\":12}"},
				{"type":"function_call_output","call_id":"call_1","output":"19"}]`,
		},
		{
			name: "reasoning without encrypted content, from another protocol, or last is dropped",
			msgs: []model.Message{{Role: model.Assistant, Parts: []model.Part{
				thinking("rs_1", ""),
				{Kind: model.KindThinking, Thinking: &model.Thinking{Protocol: "anthropic-messages", Text: "hmm", Signature: "sig"}},
				model.TextPart("answer"),
				thinking("rs_3", "enc3", "trailing"),
			}}},
			want: `[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"answer"}]}]`,
		},
		{
			name: "tool output with images is a list",
			msgs: []model.Message{
				{Role: model.Assistant, Parts: []model.Part{{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: "call_1", Name: "view_image", Input: nil}}}},
				{Role: model.User, Parts: []model.Part{result("call_1", "screenshot taken", img)}},
			},
			want: `[
				{"type":"function_call","call_id":"call_1","name":"view_image","arguments":"{}"},
				{"type":"function_call_output","call_id":"call_1","output":[
					{"type":"input_text","text":"screenshot taken"},
					{"type":"input_image","image_url":"data:image/png;base64,iVBOR"}]}]`,
		},
		{
			name: "unknown outcome and unparsed arguments",
			msgs: []model.Message{
				{Role: model.Assistant, Parts: []model.Part{{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: "call_1", Name: "bash", Input: json.RawMessage(`"{\"command\":"`)}}}},
				{Role: model.User, Parts: []model.Part{{Kind: model.KindToolResult, ToolResult: &model.ToolResult{CallID: "call_1", Unknown: true}}}},
			},
			want: `[
				{"type":"function_call","call_id":"call_1","name":"bash","arguments":"{\"command\":"},
				{"type":"function_call_output","call_id":"call_1","output":` + mustJSON(unknownOutcome) + `}]`,
		},
		{
			name: "system parts and images in user messages; empty messages skipped",
			msgs: []model.Message{
				{Role: model.User, Parts: []model.Part{model.SystemPart("prelude", "cwd is /work"), model.TextPart("look"), {Kind: model.KindImage, Image: &img}}},
				{Role: model.Assistant},
				{Role: model.User, Parts: []model.Part{model.TextPart("")}},
				{Role: model.User, Parts: []model.Part{result("call_9", "late"), model.SystemPart("notice", "time is up")}},
			},
			want: `[
				{"type":"message","role":"user","content":[
					{"type":"input_text","text":"cwd is /work"},
					{"type":"input_text","text":"look"},
					{"type":"input_image","image_url":"data:image/png;base64,iVBOR"}]},
				{"type":"function_call_output","call_id":"call_9","output":"late"},
				{"type":"message","role":"user","content":[{"type":"input_text","text":"time is up"}]}]`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := encodeMap(t, model.Request{Model: "m", Messages: tt.msgs})
			jsonEqual(t, "input", m["input"], tt.want)
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestHeader(t *testing.T) {
	h := http.Header{}
	Protocol{}.Header(h, "")
	if got := h.Get("Authorization"); got != "" {
		t.Errorf("Header(no key): Authorization = %q, want none", got)
	}
	Protocol{}.Header(h, "sk-1")
	if got := h.Get("Authorization"); got != "Bearer sk-1" {
		t.Errorf("Header: Authorization = %q, want %q", got, "Bearer sk-1")
	}
	if p := (Protocol{}); p.Name() != "openai-responses" || p.Path() != "/responses" {
		t.Errorf("Name, Path = %q, %q", p.Name(), p.Path())
	}
}
