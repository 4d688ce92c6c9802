package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
)

// lastPartial returns the last entry of s's latest thread that is a partial answer.
func lastPartial(s *Session) (Entry, bool) {
	th := s.Latest()
	for i := len(th.Entries) - 1; i >= 0; i-- {
		if th.Entries[i].Partial != "" {
			return th.Entries[i], true
		}
	}
	return Entry{}, false
}

// waitStreamed waits until session id has streamed text: it looks again after each update
// of the session, which is published with what streamed up to it.
func waitStreamed(t *testing.T, m *Manager, id, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	sub := m.Subscribe([]string{id}, m.EventID()) // before the first look: no update is missed
	defer sub.Close()
	for {
		got, _ := m.Streaming(id, m.EventID())
		if strings.Contains(got, text) {
			return
		}
		if _, err := sub.Next(ctx); err != nil {
			t.Fatalf("never streamed %q; got %q (%v)", text, got, err)
		}
	}
}

// TestStopKeepsThePartialAnswer: what streamed of an answer before Stop is saved with the
// turn, marked stopped, shown to a person after a reload and never sent to the model; the
// next turn's request holds the user's first input but not the partial answer.
func TestStopKeepsThePartialAnswer(t *testing.T) {
	f := newManager(t, ManagerOptions{},
		fakemodel.Turn{Text: "The first part of a long answer", ChunkSize: 4, Stall: true},
		fakemodel.Turn{Text: "fresh"})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	j, err := f.m.Submit(ctx, id, model.TextPart("explain"))
	if err != nil {
		t.Fatal(err)
	}
	waitStreamed(t, f.m, id, "The first part")
	f.m.Cancel(id, "")
	j.Wait(ctx)
	e, ok := lastPartial(loadFresh(t, f.store, id))
	if !ok || e.Partial != PartialStopped || !strings.HasPrefix(e.Message.Text(), "The first part") {
		t.Fatalf("after Stop: partial entry %+v, %v; want the streamed text, stopped", e, ok)
	}
	j, _ = f.m.Submit(ctx, id, model.TextPart("again"))
	if res, err := j.Wait(ctx); err != nil || res.Answer != "fresh" {
		t.Fatalf("next turn = %q, %v", res.Answer, err)
	}
	body := string(f.srv.Requests()[1].Body)
	if strings.Contains(body, "The first part") || !strings.Contains(body, "explain") {
		t.Errorf("the next request carries the partial answer, or lost the first input:\n%s", body)
	}
}

// TestBrokenStreamKeepsThePartialAnswer: a model stream that breaks mid-answer keeps what
// it sent, marked failed, and the snapshot says the turn failed.
func TestBrokenStreamKeepsThePartialAnswer(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{Text: "Half an answer", Drop: true})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	j, _ := f.m.Submit(ctx, id, model.TextPart("explain"))
	if _, err := j.Wait(ctx); err == nil {
		t.Fatal("a dropped stream ended the turn without an error")
	}
	sess := loadFresh(t, f.store, id)
	e, ok := lastPartial(sess)
	if !ok || e.Partial != PartialFailed || e.Message.Text() != "Half an answer" {
		t.Fatalf("partial entry %+v, %v; want the streamed text, failed", e, ok)
	}
	if st := sess.LastTurn(); st.Status != TurnFailed || st.Code != "stream_broken" || !strings.Contains(st.Error, "broke off") {
		t.Errorf("last turn = %+v, want failed with stream_broken, saying the stream broke off", st)
	}
	if sess.Latest().answer(len(sess.Latest().Entries)) != "" {
		t.Error("a partial answer counts as the turn's answer")
	}
}

// TestStopKeepsToolOutput: a tool call stopped while it ran keeps what it printed, in the
// result the model and the page see, marked stopped.
func TestStopKeepsToolOutput(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "long")}})
	started := make(chan struct{})
	f.host.tools.run = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		close(started)
		<-ctx.Done()
		return model.ToolResult{CallID: c.ID, Text: "step 1\nstep 2\n[killed: the call was cancelled]", IsError: true}
	}
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	j, _ := f.m.Submit(ctx, id, model.TextPart("go"))
	<-started
	f.m.Cancel(id, "")
	j.Wait(ctx)
	var res *model.ToolResult
	for _, e := range loadFresh(t, f.store, id).Latest().Entries {
		for _, p := range e.Message.Parts {
			if p.ToolResult != nil {
				res = p.ToolResult
			}
		}
	}
	if res == nil || !res.Stopped || !res.Unknown || !strings.Contains(res.Text, "step 2") {
		t.Fatalf("the stopped call's result = %+v; want it stopped, unknown, with its output", res)
	}
}

// TestCrashKeepsThePartialAnswer: what streamed for longer than a partial save's interval
// is in the file; a process that loads it while the turn is still open (as after a crash)
// shows it as an interrupted partial answer.
func TestCrashKeepsThePartialAnswer(t *testing.T) {
	f := newManager(t, ManagerOptions{PartialEvery: 100 * time.Millisecond}, fakemodel.Turn{Text: strings.Repeat("word ", 200), ChunkSize: 5, DelayMs: 25})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	j, _ := f.m.Submit(ctx, id, model.TextPart("explain"))
	deadline := time.Now().Add(20 * time.Second)
	var e Entry
	for {
		var ok bool
		if e, ok = lastPartial(loadFresh(t, f.store, id)); ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.m.Cancel(id, "")
	j.Wait(ctx)
	if e.Partial != PartialInterrupted || !strings.HasPrefix(e.Message.Text(), "word word") {
		t.Fatalf("loaded mid-stream: partial entry %+v; want what streamed, interrupted", e)
	}
}

// TestRetryAfterABrokenStream: Retry runs a failed turn again from its saved history: the
// request carries the user's input and the retry note, not the partial answer, and its
// answer is the turn's answer.
func TestRetryAfterABrokenStream(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{Text: "Half an answer", Drop: true}, fakemodel.Turn{Text: "the whole answer"})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	j, _ := f.m.Submit(ctx, id, model.TextPart("explain"))
	if _, err := j.Wait(ctx); err == nil {
		t.Fatal("a dropped stream ended the turn without an error")
	}
	j, err := f.m.Retry(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := j.Wait(ctx); err != nil || res.Answer != "the whole answer" {
		t.Fatalf("retry = %q, %v", res.Answer, err)
	}
	body := string(f.srv.Requests()[1].Body)
	if !strings.Contains(body, "explain") || !strings.Contains(body, "asked to retry") || strings.Contains(body, "Half an answer") {
		t.Errorf("the retry's request:\n%s", body)
	}
	sess := loadFresh(t, f.store, id)
	if st := sess.LastTurn(); st.Status != TurnDone || st.Answer != "the whole answer" {
		t.Errorf("last turn after the retry = %+v", st)
	}
	if _, err := f.m.Retry(ctx, id); !errors.Is(err, ErrNotRetryable) {
		t.Errorf("a retry of an answered turn = %v, want ErrNotRetryable", err)
	}
}

// TestRetryAfterStop: a stopped turn is retried; a rejected one is sent again as its input.
func TestRetryAfterStop(t *testing.T) {
	f := newManager(t, ManagerOptions{},
		fakemodel.Turn{Text: "slow words", Stall: true},
		fakemodel.Turn{Text: "done now"},
		fakemodel.Turn{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "bad request"},
		fakemodel.Turn{Text: "accepted this time"})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	j, _ := f.m.Submit(ctx, id, model.TextPart("first"))
	waitStreamed(t, f.m, id, "slow")
	f.m.Cancel(id, "")
	j.Wait(ctx)
	if j, err := f.m.Retry(ctx, id); err != nil {
		t.Fatal(err)
	} else if res, err := j.Wait(ctx); err != nil || res.Answer != "done now" {
		t.Fatalf("retry after stop = %q, %v", res.Answer, err)
	}
	j, _ = f.m.Submit(ctx, id, model.TextPart("second"))
	if _, err := j.Wait(ctx); !errors.Is(err, ErrRewound) {
		t.Fatalf("a 400 = %v, want rewound", err)
	}
	j, err := f.m.Retry(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := j.Wait(ctx); err != nil || res.Answer != "accepted this time" {
		t.Fatalf("retry after a rejection = %q, %v", res.Answer, err)
	}
	if body := string(f.srv.Requests()[3].Body); !strings.Contains(body, "second") {
		t.Errorf("the retried rejection does not carry its input:\n%s", body)
	}
}
