package sessions

import (
	"errors"
	"testing"

	"myco.dev/agent"
	"myco.dev/internal/fakemodel"
)

// TestCancelRacingASubmit (issue 20): a cancel that comes while a submit's input is not
// durable yet does not fail the submit (it answered 500 internal): the input is accepted,
// and the turn is stopped at once.
func TestCancelRacingASubmit(t *testing.T) {
	srv, client := startModel(t, fakemodel.Turn{Text: "never"})
	host := &blockingHost{testHost: testHost{tools: &fakeTools{}}, entered: make(chan struct{}, 1), gate: make(chan struct{})}
	cfg := AgentConfig{Options: agent.Options{Model: client, APIModel: "fake", System: "x", MaxOutputTokens: 1000}, ModelKey: "fake", Protocol: "anthropic-messages"}
	m, err := NewManager(ManagerOptions{Store: NewStore(t.TempDir()), Tools: host, Log: testLog(t),
		Models: testModels{def: "fake", cfgs: map[string]AgentConfig{"fake": cfg}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	ctx := t.Context()
	id, _ := m.Create(ctx, CreateOptions{Title: "t"})
	done := make(chan error, 1)
	var acc Acceptance
	go func() {
		var err error
		acc, err = m.SubmitRequest(ctx, id, "r1", Submission{Text: "do it"})
		done <- err
	}()
	<-host.entered // the turn is starting: its input is not durable yet
	if !m.Cancel(id, "") {
		t.Fatal("Cancel of a starting turn = false")
	}
	close(host.gate)
	if err := <-done; err != nil || acc.At.IsZero() {
		t.Fatalf("the submit that raced a cancel = %+v, %v; want it accepted", acc, err)
	}
	// The stopped turn may have ended already, its job gone: its end is in the session.
	if j := m.job(id); j != nil {
		if _, err := j.Wait(ctx); !errors.Is(err, ErrStopped) {
			t.Errorf("the turn = %v, want stopped", err)
		}
	}
	if _, st, err := m.Snapshot(ctx, id); err != nil || st.LastTurn.Status != TurnStopped {
		t.Errorf("the turn's end = %q (%v), want %q", st.LastTurn.Status, err, TurnStopped)
	}
	if srv.Served() != 0 {
		t.Errorf("the model was asked %d times, want none", srv.Served())
	}
}

// TestLateCancelIsANoOp (issue 20): a cancel that names a job that has ended does not stop
// the next one.
func TestLateCancelIsANoOp(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{Text: "one"}, fakemodel.Turn{Text: "two", DelayMs: 20, ChunkSize: 1})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	acc, err := f.m.SubmitRequest(ctx, id, "a", Submission{Text: "first"})
	if err != nil || acc.JobID == "" {
		t.Fatalf("submit = %+v, %v; want a job id", acc, err)
	}
	first := acc.JobID
	if j := f.m.job(id); j != nil {
		j.Wait(ctx)
	}
	acc, err = f.m.SubmitRequest(ctx, id, "b", Submission{Text: "second"})
	if err != nil || acc.JobID == first {
		t.Fatalf("second submit = %+v, %v", acc, err)
	}
	if f.m.Cancel(id, first) {
		t.Error("a cancel of the first, ended turn stopped something")
	}
	j := f.m.job(id)
	if j == nil {
		t.Fatal("the second turn is not running")
	}
	if res, err := j.Wait(ctx); err != nil || res.Answer != "two" {
		t.Errorf("the second turn = %q, %v; want it answered", res.Answer, err)
	}
}
