package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
)

// Two runtimes of one session in one process share its writer gate: the second waits for
// the first's turn, then reloads what it wrote and appends after it.
func TestWriterGatePerSession(t *testing.T) {
	f := newFixture(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("a1", "a")}},
		fakemodel.Turn{Text: "a done"},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("b1", "b")}},
		fakemodel.Turn{Text: "b done"},
	)
	runnerA := f.runner
	f.reload(t, "owner-b") // a second runtime over its own copy of the session
	runnerB := f.runner
	f.tools.run = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		if c.ID == "a1" {
			// A holds the gate: B cannot start a turn now.
			wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			if _, err := runnerB.Submit(wctx, model.TextPart("too early")); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Submit on the second runtime during the first's turn = %v, want it to wait until the deadline", err)
			}
		}
		return model.ToolResult{Text: "did " + c.ID}
	}
	if _, err := runnerA.Submit(t.Context(), model.TextPart("from a")); err != nil {
		t.Fatal(err)
	}
	if _, err := runnerB.Submit(t.Context(), model.TextPart("from b")); err != nil {
		t.Fatalf("Submit on the second runtime: %v", err)
	}
	if msgs := requestMessages(t, f.srv, 2); len(msgs) != 5 {
		t.Errorf("the second runtime sent %d messages, want 5: the first runtime's turn, reloaded, and its input", len(msgs))
	}
	th := loadFresh(t, f.store, f.id).Latest()
	var texts []string
	for _, e := range th.Entries {
		texts = append(texts, e.Message.Text())
	}
	if len(th.Entries) != 8 || texts[0] != "from a" || texts[3] != "a done" || texts[4] != "from b" || texts[7] != "b done" {
		t.Errorf("entries %q, want both turns whole and in order", texts)
	}
}

// A holder of another store (as another process would be) keeps a runtime waiting, with a
// notice naming the holder; the wait is bounded by ctx and its error names the session.
func TestWriterGateAcrossStores(t *testing.T) {
	f := newFixture(t, fakemodel.Turn{Text: "ok"})
	other := NewStore(f.store.Dir())
	unlock, err := other.lockSession(t.Context(), f.id, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	stop := errors.New("gave up waiting")
	var notices []string
	f.sink = func(ev event) {
		if n, ok := ev.(notice); ok {
			notices = append(notices, n.Text)
			cancel(stop)
		}
	}
	f.bind(t, "owner-1", nil)
	_, err = f.runner.Submit(ctx, model.TextPart("hello"))
	if !errors.Is(err, stop) || !strings.Contains(err.Error(), f.id) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("Submit while another store holds the lock = %v, want the wait's cause, the session and the holder", err)
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "in use by") {
		t.Errorf("notices %q, want one saying the session is in use", notices)
	}
	if f.srv.Served() != 0 || len(f.session().Latest().Entries) != 0 {
		t.Error("work happened without the lock")
	}
	unlock()
	if _, err := f.submit(t, "now"); err != nil {
		t.Errorf("Submit after the other holder let go: %v", err)
	}
}

// Two processes submit turns on one session at once: the advisory lock serializes them, each
// reloads what the other wrote, and the session ends with every turn of both whole.
func TestWriterGateAcrossProcesses(t *testing.T) {
	if crashDriver == "" {
		t.Fatal("the crash driver did not build")
	}
	const turns = 15
	dir := t.TempDir()
	st := NewStore(dir)
	if err := st.Create(t.Context(), &Session{ID: "shared-1", Created: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	stderr := make([]strings.Builder, 2)
	for i, tag := range []string{"A", "B"} {
		cmd := exec.Command(crashDriver, "-dir", dir, "-session", "shared-1", "-turns", fmt.Sprint(turns), "-tag", tag)
		cmd.Stderr = &stderr[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { errs[i] = cmd.Wait() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("driver %d: %v\n%s", i, err, stderr[i].String())
		}
	}
	s, err := st.Load(t.Context(), "shared-1")
	if err != nil {
		t.Fatal(err)
	}
	th := s.Latest()
	next := map[string]int{"A": 1, "B": 1}
	owners := map[string]bool{}
	for i := 0; i < len(th.Entries); i += 4 {
		in := th.Entries[i]
		if in.Facts != nil {
			owners[in.Facts.Owner] = true
		}
		var tag string
		var k int
		if _, err := fmt.Sscanf(in.Message.Text(), "%s turn %d", &tag, &k); err != nil || in.AcceptedAt == nil || k != next[tag] {
			t.Fatalf("entry %d = %q, want the input of %s turn %d", i, in.Message.Text(), tag, next[tag])
		}
		next[tag]++
		if i+3 >= len(th.Entries) || len(th.Entries[i+1].Message.ToolCalls()) != 3 || th.Entries[i+2].Recovered || unknownIn(th.Entries[i+2].Message) ||
			th.Entries[i+3].Message.Text() != "All three are done." {
			t.Fatalf("the turn at entry %d is not whole: interleaved writes", i)
		}
	}
	if next["A"] != turns+1 || next["B"] != turns+1 || len(owners) < 2 {
		t.Errorf("turns A %d, B %d, %d owners; want %d each from two processes", next["A"]-1, next["B"]-1, len(owners), turns)
	}
	t.Logf("%d entries; waits: %d", len(th.Entries), strings.Count(stderr[0].String()+stderr[1].String(), "waiting for it"))
}

// A torn last write (never acknowledged) is cut off before the next append, which would
// otherwise run on from it and damage a record in the middle of the log.
func TestTornTailCutBeforeAppend(t *testing.T) {
	f := newFixture(t, fakemodel.Turn{Text: "one"}, fakemodel.Turn{Text: "two"})
	if _, err := f.submit(t, "first"); err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(f.store.Path(f.id), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString(`0badc0de {"kind":"message","mess`)
	fh.Close()
	f.reload(t, "owner-2")
	if _, err := f.submit(t, "second"); err != nil {
		t.Fatal(err)
	}
	if th := loadFresh(t, f.store, f.id).Latest(); len(th.Entries) != 4 || th.Entries[3].Message.Text() != "two" {
		t.Errorf("after a torn tail and a turn: %d entries", len(th.Entries))
	}
}

// TestUpdateNeverOverwritesNewerMetadata: a runtime whose copy of the document is stale
// (another store, standing for another process, changed the scratchpad) sets the title; the
// write takes the gate, reloads first, and keeps the other writer's scratchpad.
func TestUpdateNeverOverwritesNewerMetadata(t *testing.T) {
	f := newFixture(t)
	other := NewStore(f.store.Dir())
	doc2, err := openDocument(t.Context(), other, f.id)
	if err != nil {
		t.Fatal(err)
	}
	rt2, err := newRuntime(runtimeOptions{Doc: doc2, Owner: "owner-2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt2.Update(t.Context(), func(s *Session) { s.Scratchpad = "from the other process" }); err != nil {
		t.Fatal(err)
	}
	if err := f.rt.Update(t.Context(), func(s *Session) { s.Title = "from this one" }); err != nil {
		t.Fatal(err)
	}
	got := loadFresh(t, f.store, f.id)
	if got.Title != "from this one" || got.Scratchpad != "from the other process" {
		t.Errorf("title %q, scratchpad %q: want both writes kept", got.Title, got.Scratchpad)
	}
	// While another holder has the gate, an Update waits for it (bounded by ctx).
	unlock, err := other.lockSession(t.Context(), f.id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := f.rt.Update(ctx, func(s *Session) { s.Title = "late" }); err == nil {
		t.Error("Update while another process held the session succeeded")
	}
}

// TestUpdateKeepsTheGateItJoined: a metadata update that joins a turn's hold on the writer
// gate (the session tools, or the API while a turn runs) keeps the gate until it has
// written, even when the turn lets go first; another writer gets it only then.
func TestUpdateKeepsTheGateItJoined(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if err := f.rt.acquire(ctx, nil); err != nil { // a turn
		t.Fatal(err)
	}
	writing, proceed := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- f.rt.Update(ctx, func(s *Session) {
			close(writing)
			<-proceed
			s.Title = "joined"
		})
	}()
	<-writing
	f.rt.release() // the turn ends while the update is being written
	other := NewStore(f.store.Dir())
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if unlock, err := other.lockSession(wctx, f.id, nil); err == nil {
		unlock()
		t.Error("another writer took the gate while an update that joined the turn was being written")
	}
	close(proceed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	unlock, err := other.lockSession(ctx, f.id, nil)
	if err != nil {
		t.Fatalf("the gate after the update: %v", err)
	}
	unlock()
	if got := loadFresh(t, f.store, f.id).Title; got != "joined" {
		t.Errorf("title %q, want the update saved", got)
	}
}
