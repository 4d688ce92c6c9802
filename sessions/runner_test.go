package sessions

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"myco.dev/agent/model"
	"myco.dev/hosts/tools"
	"myco.dev/internal/fakemodel"
)

func TestSubmitDurableTurn(t *testing.T) {
	f := newFixture(t,
		fakemodel.Turn{Text: "Working.", ToolCalls: []fakemodel.ToolCall{call("c1", "a"), call("c2", "b")}, Usage: fakemodel.Usage{Input: 100, Output: 5}},
		fakemodel.Turn{Text: "Done: {{tool_result}}", Usage: fakemodel.Usage{Input: 150, Output: 7}},
	)
	res, err := f.submit(t, "do the work")
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if !strings.HasPrefix(res.Answer, "Done:") {
		t.Errorf("Answer = %q", res.Answer)
	}
	if n := f.tools.count(); n != 2 {
		t.Errorf("tools ran %d calls, want 2", n)
	}
	data, _ := os.ReadFile(f.store.Path(f.id))
	for _, kind := range []string{`"kind":"intent"`, `"kind":"result"`, `"kind":"turn"`, `"kind":"usage"`} {
		if n := bytes.Count(data, []byte(kind)); n == 0 {
			t.Errorf("log has no %s record", kind)
		}
	}
	// Intents come before their results, and both before the batch's checkpoint.
	if i, r, m := bytes.Index(data, []byte(`"kind":"intent"`)), bytes.Index(data, []byte(`"kind":"result"`)), bytes.Index(data, []byte(`"call_id":"c1","text":"did`)); !(i < r && r < m) {
		t.Errorf("intent at %d, result at %d, results message at %d: want that order", i, r, m)
	}
	s := loadFresh(t, f.store, f.id)
	th := s.Latest()
	if len(th.Entries) != 4 {
		t.Fatalf("entries = %d, want 4 (input, calls, results, answer)", len(th.Entries))
	}
	in := th.Entries[0]
	if in.AcceptedAt == nil || in.Facts == nil || in.Facts.Owner != "owner-1" || in.Facts.APIModel != "fake-1" {
		t.Errorf("input entry = %+v, want an acceptance time and runtime facts", in)
	}
	if in.Message.Parts[0].Kind != model.KindSystem || !strings.Contains(in.Message.Parts[0].Text, "owner: owner-1") {
		t.Errorf("input parts = %+v, want a hidden runtime part first", in.Message.Parts)
	}
	if th.Entries[3].AcceptedAt != nil {
		t.Error("an assistant message has an acceptance time")
	}
	if th.Usage.Input != 150 || th.LastTurn() != TurnDone || th.Interrupted() {
		t.Errorf("usage %+v, last turn %q, interrupted %v", th.Usage, th.LastTurn(), th.Interrupted())
	}
	if err := th.Executable(); err != nil {
		t.Errorf("Executable: %v", err)
	}
	// The second turn's request holds the first turn unchanged.
	if _, err := (func() (any, error) { f.srv.Script(fakemodel.Turn{Text: "again"}); return f.submit(t, "more") })(); err != nil {
		t.Fatal(err)
	}
	if msgs := requestMessages(t, f.srv, 2); len(msgs) != 5 {
		t.Errorf("second turn sent %d messages, want 5", len(msgs))
	}
}

// crashLog writes the state a process leaves when it dies in a tool batch: the calls are
// saved, c1's intent and result, c2's intent only, c3 nothing.
func crashLog(t *testing.T, f *fixture) {
	t.Helper()
	d := f.rt.doc
	th := d.latest()
	in := user("run three things")
	if _, err := d.checkpoint(t.Context(), th, []Entry{in,
		{Message: model.Message{Role: model.Assistant, Parts: []model.Part{
			{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: "c1", Name: "work", Input: []byte(`{"what":"a"}`)}},
			{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: "c2", Name: "work", Input: []byte(`{"what":"b","host":"box"}`)}},
			{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: "c3", Name: "work", Input: []byte(`{"what":"c"}`)}},
		}}}}, nil); err != nil {
		t.Fatal(err)
	}
	at := in.AcceptedAt.Add(1)
	if err := d.recordIntent(th, &intentRec{Thread: th.ID, Call: model.ToolCall{ID: "c1", Name: "work"}, Host: "local", Started: at}); err != nil {
		t.Fatal(err)
	}
	if err := d.recordIntent(th, &intentRec{Thread: th.ID, Call: model.ToolCall{ID: "c2", Name: "work"}, Host: "box", Started: at}); err != nil {
		t.Fatal(err)
	}
	if err := d.recordResult(th, &resultRec{Thread: th.ID, Result: model.ToolResult{CallID: "c1", Text: "a done"}}); err != nil {
		t.Fatal(err)
	}
}

func TestRecoverInterruptedBatch(t *testing.T) {
	f := newFixture(t, fakemodel.Turn{Text: "I will check the box first."})
	crashLog(t, f)
	path := f.store.Path(f.id)
	before, _ := os.ReadFile(path)
	s := loadFresh(t, f.store, f.id)
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("Load wrote the file")
	}
	th := s.Latest()
	if len(th.Entries) != 3 || !th.Entries[2].Recovered {
		t.Fatalf("entries = %d, want 3 with a recovered results message", len(th.Entries))
	}
	if !th.Interrupted() {
		t.Error("a crash-cut turn is not reported as interrupted")
	}
	parts := th.Entries[2].Message.Parts
	r1, r2, r3 := parts[0].ToolResult, parts[1].ToolResult, parts[2].ToolResult
	if r1.Text != "a done" || r1.Unknown {
		t.Errorf("c1 = %+v, want its recorded result", r1)
	}
	if !r2.Unknown || !strings.Contains(r2.Text, "host box") || !strings.Contains(r2.Text, "started") {
		t.Errorf("c2 = %+v, want an unknown outcome naming host and start time", r2)
	}
	if !r3.IsError || r3.Unknown || !strings.Contains(r3.Text, "not run") {
		t.Errorf("c3 = %+v, want not run", r3)
	}
	if p := parts[3]; p.Kind != model.KindSystem || p.System != "runtime" || !strings.Contains(p.Text, "Inspect the external state") {
		t.Errorf("notice = %+v, want a hidden runtime notice", p)
	}
	if err := th.Executable(); err != nil {
		t.Errorf("recovered thread not executable: %v", err)
	}

	// Resuming sends the recovered outcomes and never replays a call.
	f.bind(t, "owner-2", nil)
	if _, err := f.runner.Resume(t.Context()); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if n := f.tools.count(); n != 0 {
		t.Errorf("%d calls replayed", n)
	}
	msgs := requestMessages(t, f.srv, 0)
	if len(msgs) != 3 {
		t.Fatalf("resume sent %d messages, want 3", len(msgs))
	}
	s = loadFresh(t, f.store, f.id)
	if th := s.Latest(); len(th.Entries) != 4 || th.Entries[2].Message.Parts[1].ToolResult.Unknown != true || th.LastTurn() != TurnDone {
		t.Errorf("after resume: %d entries, last turn %q", len(th.Entries), th.LastTurn())
	}
}

func TestCancelledTurnIsFinal(t *testing.T) {
	started := make(chan struct{})
	f := newFixture(t, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "slow")}})
	f.tools.run = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		close(started)
		<-ctx.Done()
		return model.ToolResult{Text: "killed"}
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	go func() { <-started; cancel(errors.New("stopped by user")) }()
	_, err := f.runner.Submit(ctx, model.TextPart("go"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Submit = %v, want cancelled", err)
	}
	s := loadFresh(t, f.store, f.id)
	th := s.Latest()
	if th.LastTurn() != TurnCancelled || th.Interrupted() {
		t.Errorf("last turn %q, interrupted %v; want cancelled and final", th.LastTurn(), th.Interrupted())
	}
	if last := th.Entries[len(th.Entries)-1].Message.Parts[0].ToolResult; last == nil || !last.Unknown {
		t.Errorf("cancelled call result = %+v, want unknown", last)
	}
	f.bind(t, "owner-2", nil)
	if _, err := f.runner.Resume(t.Context()); !errors.Is(err, ErrNotResumable) {
		t.Errorf("Resume after cancel = %v, want ErrNotResumable", err)
	}
}

func TestSubmitAfterCrashBeforeAnswer(t *testing.T) {
	f := newFixture(t, fakemodel.Turn{Text: "answer"})
	if _, err := f.rt.doc.checkpoint(t.Context(), f.rt.doc.latest(), []Entry{user("first, never answered")}, nil); err != nil {
		t.Fatal(err)
	}
	f.reload(t, "owner-2")
	if _, err := f.submit(t, "second"); err != nil {
		t.Fatalf("Submit after a crash-cut turn: %v", err)
	}
	if msgs := requestMessages(t, f.srv, 0); len(msgs) != 1 {
		t.Errorf("sent %d messages, want the two inputs merged into 1", len(msgs))
	}
}

func TestRequestTooLargeRewinds(t *testing.T) {
	f := newFixture(t, fakemodel.Turn{Text: "small answer"})
	f.client.MaxRequestBytes = 3000
	if _, err := f.submit(t, "hello"); err != nil {
		t.Fatal(err)
	}
	_, err := f.submit(t, strings.Repeat("big ", 1000))
	var tl *model.RequestTooLargeError
	if !errors.Is(err, ErrRewound) || !errors.As(err, &tl) {
		t.Fatalf("Submit = %v, want ErrRewound with the RequestTooLargeError", err)
	}
	for _, s := range []*Session{f.session(), loadFresh(t, f.store, f.id)} {
		if len(s.Threads) != 2 {
			t.Fatalf("threads = %d, want 2", len(s.Threads))
		}
		old, cur := s.Threads[0], s.Threads[1]
		// The rewound thread keeps the first turn, shows the rejected input after it
		// (marked, out of the model's input) and ends there as rejected, with the reason.
		if cur.Reason != "rewind" || cur.Predecessor != old.ID || len(cur.Entries) != 3 || !cur.Entries[2].Rejected || len(cur.History()) != 2 {
			t.Errorf("rewound thread = %d entries (last rejected: %v), history %d; want the first turn and the rejected input shown",
				len(cur.Entries), cur.Entries[len(cur.Entries)-1].Rejected, len(cur.History()))
		}
		if lt := s.LastTurn(); lt.Status != TurnRejected || lt.Code != "request_too_large" || !strings.Contains(lt.Error, "max_request_bytes") || lt.Answer != "" {
			t.Errorf("LastTurn = %+v, want rejected, request_too_large, no answer", lt)
		}
		if len(old.Entries) != 3 || old.LastTurn() != TurnRejected {
			t.Errorf("predecessor has %d entries, last turn %q; want the rejected input kept", len(old.Entries), old.LastTurn())
		}
	}
	f.srv.Script(fakemodel.Turn{Text: "fine"})
	if _, err := f.submit(t, "short"); err != nil {
		t.Fatalf("Submit after rewind: %v", err)
	}
	got := loadFresh(t, f.store, f.id)
	if th := got.Latest(); len(th.Entries) != 5 || len(th.History()) != 4 {
		t.Errorf("after rewind and a new turn: %d entries, %d of them model input; want 5 and 4", len(th.Entries), len(th.History()))
	}
	if lt := got.LastTurn(); lt.Status != TurnDone || lt.Answer != "fine" {
		t.Errorf("LastTurn after the next turn = %+v, want done with its answer", lt)
	}
	if msgs := requestMessages(t, f.srv, 1); len(msgs) != 3 {
		t.Errorf("the turn after the rewind sent %d messages, want 3 (the rejected input left out)", len(msgs))
	}
}

// failingLog fails every write after ok writes.
type failingLog struct {
	f    *os.File
	fail bool
}

func (l *failingLog) Write(p []byte) (int, error) {
	if l.fail { // as an *os.File says it
		return 0, &fs.PathError{Op: "write", Path: l.f.Name(), Err: syscall.ENOSPC}
	}
	return l.f.Write(p)
}
func (l *failingLog) Sync() error  { return l.f.Sync() }
func (l *failingLog) Close() error { return l.f.Close() }

func TestFailClosed(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   int // writes that succeed before the disk is full
	}{
		{"input", 0},
		{"after model step", 1},
		{"intent", 2},
		{"result", 3},
		{"batch", 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t,
				fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "a")}},
				fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c2", "b")}},
				fakemodel.Turn{Text: "done"},
			)
			writes := 0
			f.store.openLog = func(path string) (logFile, error) {
				fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				writes++
				return &failingLog{f: fh, fail: writes > tt.ok}, err
			}
			_, err := f.submit(t, "go")
			if !errors.Is(err, ErrSaveFailed) || !strings.Contains(err.Error(), "no space left") {
				t.Fatalf("Submit = %v, want ErrSaveFailed naming the write error", err)
			}
			if path := f.store.Path(f.id); strings.Count(err.Error(), path) != 1 {
				t.Errorf("Submit = %v, want the file named once", err)
			}
			served, ran := f.srv.Served(), f.tools.count()
			if _, err := f.submit(t, "again"); !errors.Is(err, ErrSaveFailed) {
				t.Errorf("Submit after a failed save = %v, want ErrSaveFailed", err)
			}
			if f.srv.Served() != served || f.tools.count() != ran {
				t.Error("model or tool work happened after the failed save")
			}
			if ran > 1 {
				t.Errorf("%d tools ran; work must stop at the first failed save", ran)
			}
			stopped := false
			for _, ev := range f.events {
				if _, ok := ev.(saveFailed); ok {
					stopped = true
				}
			}
			if !stopped {
				t.Error("no saveFailed event")
			}
			if _, err := f.store.Load(t.Context(), f.id); err != nil {
				t.Errorf("Load after a failed save: %v", err)
			}
		})
	}
}

func TestStaleCheckpointRejected(t *testing.T) {
	f := newFixture(t)
	d := f.rt.doc
	th := d.latest()
	if _, err := d.checkpoint(t.Context(), th, []Entry{user("a"), user("b")}, nil); err != nil {
		t.Fatal(err)
	}
	saved := d.copyOf(th).Messages()
	tn := newTurn(f.runner, th, saved) // two saved messages
	if err := tn.checkpoint(t.Context(), saved[:1]); !errors.Is(err, ErrStaleCheckpoint) {
		t.Errorf("checkpoint of a shorter history = %v, want ErrStaleCheckpoint", err)
	}
	nt := &Thread{ID: "t2", Entries: []Entry{user("c")}}
	if err := d.startThread(t.Context(), nt, 0); err != nil {
		t.Fatal(err)
	}
	if err := tn.checkpoint(t.Context(), append(saved, saved[0])); !errors.Is(err, ErrStaleCheckpoint) {
		t.Errorf("checkpoint of a replaced thread = %v, want ErrStaleCheckpoint", err)
	}
	if n := len(d.copyOf(th).Entries); n != 2 || f.rt.Err() != nil {
		t.Errorf("after a stale checkpoint: %d entries, session stopped by %v; want 2 and work going on", n, f.rt.Err())
	}
}

func TestRuntimeFacts(t *testing.T) {
	f := newFixture(t, fakemodel.Turn{Text: "1"}, fakemodel.Turn{Text: "2"}, fakemodel.Turn{Text: "3"}, fakemodel.Turn{Text: "4"})
	f.bind(t, "owner-1", func(context.Context) (Inventory, error) {
		return Inventory{{Host: "local", Bash: []tools.BashSessionInfo{{ID: "1", State: "running", Command: "make"}}}}, nil
	})
	if _, err := f.submit(t, "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.submit(t, "two"); err != nil {
		t.Fatal(err)
	}
	th := f.session().Latest()
	if th.Entries[2].Facts != nil {
		t.Error("unchanged facts were recorded again")
	}
	// A new process: a new owner whose inventory is empty.
	f.reload(t, "owner-2")
	f.cfg.Options.Effort = "high"
	if _, err := f.submit(t, "three"); err != nil {
		t.Fatal(err)
	}
	th = f.session().Latest()
	in := th.Entries[len(th.Entries)-2]
	text := in.Message.Parts[0].Text
	for _, want := range []string{"owner: owner-2", "new runtime", "owner-1", "local bash session 1 (running): make", "unavailable", "effort changed from unknown to high"} {
		if !strings.Contains(text, want) {
			t.Errorf("runtime part lacks %q:\n%s", want, text)
		}
	}
	if in.AcceptedAt == nil || in.Message.Text() != "three" {
		t.Errorf("hidden parts leaked into the visible text: %q", in.Message.Text())
	}
	f.cfg.ModelKey, f.cfg.Options.APIModel, f.cfg.MaxImageBase64Bytes = "other", "other-2", 4000
	if _, err := f.submit(t, "four"); err != nil {
		t.Fatal(err)
	}
	th = f.session().Latest()
	text = th.Entries[len(th.Entries)-2].Message.Parts[0].Text
	for _, want := range []string{"model changed from fake (fake-1) to other (other-2)", "view_image up to 4000 bytes of base64, about 3000 bytes on disk"} {
		if !strings.Contains(text, want) {
			t.Errorf("runtime part lacks %q:\n%s", want, text)
		}
	}
}
