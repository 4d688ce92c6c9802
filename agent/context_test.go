package agent

import (
	"strings"
	"testing"

	"myco/agent/model"
)

// The agent sees its context use at each step after the first, on the request only: the
// stored history carries no note.
func TestContextUseNote(t *testing.T) {
	m := &fakeModel{turns: []turn{
		doneTurn(model.StopToolUse, call("c1")),
		answerTurn("done"),
	}}
	a := newAgent(t, m, &fakeTools{}, nil, Options{ContextWindow: 1000})
	h, _, err := a.Run(t.Context(), []model.Message{userText("hi")})
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d", len(reqs))
	}
	if hasContextNote(reqs[0].Messages) {
		t.Error("the first request carries a context note before any usage was reported")
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	note := last.Parts[len(last.Parts)-1]
	if note.Kind != model.KindSystem || note.Text != "[myco: context use] 100 of 1,000 tokens (10.0% of the window)." {
		t.Errorf("last part of the second request = %+v, want the context note", note)
	}
	if hasContextNote(h) {
		t.Error("the context note leaked into the stored history")
	}
}

func hasContextNote(msgs []model.Message) bool {
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Kind == model.KindSystem && strings.HasPrefix(p.Text, "[myco: context use]") {
				return true
			}
		}
	}
	return false
}
