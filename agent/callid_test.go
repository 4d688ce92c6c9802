package agent

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"myco.dev/agent/model"
)

func callWithInput(id, input string) model.Part {
	return model.Part{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: id, Name: "bash", Input: json.RawMessage(input)}}
}

func TestDuplicateCallIDsGetFreshOnes(t *testing.T) {
	m := &fakeModel{turns: []turn{
		doneTurn(model.StopToolUse, callWithInput("dup", `{"n":1}`), callWithInput("dup", `{"n":2}`)),
		doneTurn(model.StopToolUse, callWithInput("dup", `{"n":3}`), callWithInput("", `{"n":4}`), callWithInput("bad id!", `{"n":5}`)),
		answerTurn("done"),
	}}
	tools := &fakeTools{}
	rec := &recorder{}
	a := newAgent(t, m, tools, rec, Options{})
	h, _, err := a.Run(t.Context(), []model.Message{userText("go")})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := "user: text(go)\n" +
		"assistant: call(dup) call(dup_2)\n" +
		`user: result(dup=ran bash {"n":1}) result(dup_2=ran bash {"n":2})` + "\n" +
		"assistant: call(dup_3) call(call) call(bad_id_)\n" +
		`user: result(dup_3=ran bash {"n":3}) result(call=ran bash {"n":4}) result(bad_id_=ran bash {"n":5})` + "\n" +
		"assistant: text(done)\n"
	if got := dump(h); got != want {
		t.Errorf("history:\n%s\nwant:\n%s", got, want)
	}
	checkConsistent(t, h)
	called := tools.called()
	slices.Sort(called) // the calls of one response run concurrently
	if got := strings.Join(called, " "); got != "bad_id_ call dup dup_2 dup_3" {
		t.Errorf("tools called with ids %q", got)
	}
	for i, req := range m.requests() {
		ids := map[string]bool{}
		for _, msg := range req.Messages {
			for _, c := range msg.ToolCalls() {
				if ids[c.ID] {
					t.Errorf("request %d repeats call id %q", i+1, c.ID)
				}
				ids[c.ID] = true
			}
		}
	}
	var started []string
	for _, ev := range rec.events {
		if s, ok := ev.(ToolStarted); ok {
			started = append(started, s.Call.ID)
		}
	}
	if got := strings.Join(started, " "); got != "dup dup_2 dup_3 call bad_id_" {
		t.Errorf("ToolStarted ids %q", got)
	}
}

func TestClaim(t *testing.T) {
	ids := callIDs{"a": true, "a_2": true}
	long := strings.Repeat("x", 100)
	for _, tt := range []struct{ in, want string }{
		{"b", "b"},
		{"b", "b_2"},
		{"a", "a_3"},
		{"", "call"},
		{"", "call_2"},
		{"toolu_01A-z", "toolu_01A-z"},
		{"call.1", "call_1"},
		{"héllo", "h__llo"},
		{long, long[:maxCallID-8]},
		{long, long[:maxCallID-8] + "_2"},
	} {
		got := ids.claim(tt.in)
		if got != tt.want {
			t.Errorf("claim(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !validCallID(got) {
			t.Errorf("claim(%q) = %q, not a valid id", tt.in, got)
		}
	}
}
