package sessions

import (
	"errors"
	"strings"
	"testing"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
)

// TestEditResend: editing a message a user sent goes on in a successor thread that keeps
// what came before it; the model's request holds the edit, not the original or what
// followed it; the old thread stays. Only a user's message of the active thread can be
// edited.
func TestEditResend(t *testing.T) {
	f := newManager(t, ManagerOptions{},
		fakemodel.Turn{Text: "answer one"}, fakemodel.Turn{Text: "answer two"}, fakemodel.Turn{Text: "answer three"})
	ctx := t.Context()
	id, _ := f.m.Create(ctx, CreateOptions{})
	for _, text := range []string{"alpha", "beta"} {
		j, _ := f.m.Submit(ctx, id, model.TextPart(text))
		if _, err := j.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sess, _, _ := f.m.Snapshot(ctx, id)
	th := sess.Latest()
	beta := -1
	for i, e := range th.Entries {
		if e.AcceptedAt != nil && strings.Contains(e.Message.Text(), "beta") {
			beta = i
		}
	}
	if _, err := f.m.EditResend(ctx, id, th.ID, beta+1, "x"); !errors.Is(err, ErrNotEditable) {
		t.Errorf("editing an answer = %v, want ErrNotEditable", err)
	}
	j, err := f.m.EditResend(ctx, id, th.ID, beta, "gamma")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := j.Wait(ctx); err != nil || res.Answer != "answer three" {
		t.Fatalf("the edit's turn = %q, %v", res.Answer, err)
	}
	body := string(f.srv.Requests()[2].Body)
	if !strings.Contains(body, "alpha") || !strings.Contains(body, "answer one") || !strings.Contains(body, "gamma") ||
		strings.Contains(body, "beta") || strings.Contains(body, "answer two") {
		t.Errorf("the edit's request:\n%s", body)
	}
	sess = loadFresh(t, f.store, id)
	if n := len(sess.Threads); n != 2 || sess.Latest().Reason != "edit" || sess.Threads[0].ID != th.ID {
		t.Fatalf("threads = %d, latest reason %q; want the old thread kept and an edit successor", n, sess.Latest().Reason)
	}
	if got := sess.Threads[0].answer(len(sess.Threads[0].Entries)); got != "answer two" {
		t.Errorf("the old thread's answer = %q, want it as it was", got)
	}
	if _, err := f.m.EditResend(ctx, id, th.ID, beta, "delta"); !errors.Is(err, ErrNotEditable) {
		t.Errorf("editing a message of an earlier thread = %v, want ErrNotEditable", err)
	}
}
