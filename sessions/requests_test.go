package sessions

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
)

// openNew creates a session with o and returns it live.
func (f *mgrFixture) openNew(t *testing.T, o CreateOptions) (string, *live) {
	t.Helper()
	id, err := f.m.Create(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	l, err := f.m.open(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return id, l
}

// TestOwnMetadataWriteIsNotElsewhere: while this process writes a session's metadata (a
// title, an archive, a model choice: the writer gate and its file lock are held for the
// save), the session is not "busy elsewhere", and a submit is not refused for it; it waits
// its turn at the in-process gate.
func TestOwnMetadataWriteIsNotElsewhere(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{Text: "hi"})
	ctx := t.Context()
	id, l := f.openNew(t, CreateOptions{})
	// What a metadata write does: rt.Update takes the writer gate for the save.
	if err := l.rt.acquire(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, st, err := f.m.Snapshot(ctx, id)
	if err != nil || st.Elsewhere != "" {
		t.Errorf("Snapshot during this process's metadata write: Elsewhere = %q, %v", st.Elsewhere, err)
	}
	j, err := f.m.Submit(ctx, id, model.TextPart("hi"))
	l.rt.release()
	if err != nil {
		t.Fatalf("Submit during this process's metadata write = %v", err)
	}
	if _, err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// blockingHost is a tool host whose inventory waits for gate: a turn's input is not durable
// until it opens (the runtime facts come first).
type blockingHost struct {
	testHost
	entered chan struct{}
	gate    chan struct{}
}

var _ Inventorier = (*blockingHost)(nil)

func (h *blockingHost) Inventory(ctx context.Context, _ string) (Inventory, error) {
	select {
	case h.entered <- struct{}{}:
	default:
	}
	select {
	case <-h.gate:
	case <-ctx.Done():
	}
	return nil, nil
}

// TestSubmitRetryWaitsForTheFirst: a client that gives up before its input is durable and
// retries the same request id gets the first attempt's acceptance, not a "busy" refusal
// (which says nothing was queued), and one turn runs.
func TestSubmitRetryWaitsForTheFirst(t *testing.T) {
	srv, client := startModel(t, fakemodel.Turn{Text: "hi"})
	host := &blockingHost{testHost: testHost{tools: &fakeTools{}}, entered: make(chan struct{}, 1), gate: make(chan struct{})}
	cfg := AgentConfig{Options: agent.Options{Model: client, APIModel: "fake", System: "x", MaxOutputTokens: 1000}, ModelKey: "fake", Protocol: "anthropic-messages"}
	m, err := NewManager(ManagerOptions{Store: NewStore(t.TempDir()), Tools: host, Log: testLog(t),
		Models: testModels{def: "fake", cfgs: map[string]AgentConfig{"fake": cfg}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	ctx := t.Context()
	id, err := m.Create(ctx, CreateOptions{Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	first, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := m.SubmitRequest(first, id, "r1", Submission{Text: "do it"}); done <- err }()
	<-host.entered
	cancel() // the client gives up
	if err := <-done; err == nil {
		t.Fatal("the first attempt: want the client's cancellation")
	}
	retry := make(chan error, 1)
	var acc Acceptance
	go func() {
		var err error
		acc, err = m.SubmitRequest(ctx, id, "r1", Submission{Text: "do it"})
		retry <- err
	}()
	time.Sleep(50 * time.Millisecond) // the retry waits; a refusal would come at once
	close(host.gate)
	if err := <-retry; err != nil || !acc.Repeat {
		t.Fatalf("the retry = %+v, %v; want the first attempt's acceptance", acc, err)
	}
	if j := m.job(id); j != nil {
		j.Wait(ctx)
	}
	if n := srv.Served(); n != 1 {
		t.Errorf("the model was asked %d times, want once", n)
	}
	if n := len(m.requests.running); n != 0 {
		t.Errorf("%d request locks are kept after the requests ended, want none", n)
	}
}

// TestRequestLocksSerialize: requests with one id wait for each other; others do not.
func TestRequestLocksSerialize(t *testing.T) {
	var q requests
	unlock := q.lock("a")
	other := q.lock("b") // another id does not wait
	other()
	got := make(chan struct{})
	go func() { q.lock("a")(); close(got) }()
	select {
	case <-got:
		t.Fatal("a second request with the same id did not wait for the first")
	case <-time.After(20 * time.Millisecond):
	}
	unlock()
	<-got
	if len(q.running) != 0 {
		t.Errorf("locks kept: %v", q.running)
	}
}

// TestNoJobOnAClosedLiveSession: a live session that CloseSession took out between a
// submit's open and its start (its tools released) gets no job; the submit opens the
// session again and runs there, stoppable.
func TestNoJobOnAClosedLiveSession(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{Text: "hi"})
	ctx := t.Context()
	id, l := f.openNew(t, CreateOptions{})
	f.m.CloseSession(id)
	if _, err := f.m.start(l, JobTurn, request{}, func(context.Context, *Job, *runner) (JobResult, error) { return JobResult{}, nil }); !errors.Is(err, errLiveClosed) {
		t.Fatalf("a job on a closed live session: %v, want errLiveClosed", err)
	}
	j, err := f.m.Submit(ctx, id, model.TextPart("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestUpdateFailurePutsBackTheMetadata: a metadata save that fails puts the title back and
// leaves the rest of the document as it was.
func TestUpdateFailurePutsBackTheMetadata(t *testing.T) {
	f := newManager(t, ManagerOptions{})
	ctx := t.Context()
	id, l := f.openNew(t, CreateOptions{Title: "old"})
	var threads []*Thread
	l.rt.View(func(s *Session) { threads = s.Threads })
	f.store.openLog = func(string) (logFile, error) { return nil, errors.New("the disk is gone") }
	if err := l.rt.Update(ctx, func(s *Session) { s.Title, s.Archived = "new", true }); err == nil {
		t.Fatal("the update saved on a disk that is gone")
	}
	l.rt.View(func(s *Session) {
		if s.Title != "old" || s.Archived || len(s.Threads) != len(threads) || s.ID != id {
			t.Errorf("after a failed save: title %q archived %v, %d threads; want the document as it was", s.Title, s.Archived, len(s.Threads))
		}
	})
}

// TestOpenLoadsWithoutTheManagerLock: while one session's file is being read (here a
// load held until the test lets it go), the manager answers for other sessions, and a
// second open of that session waits for the first load instead of reading the file again.
func TestOpenLoadsWithoutTheManagerLock(t *testing.T) {
	f := newManager(t, ManagerOptions{})
	ctx := t.Context()
	id, err := f.m.Create(ctx, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := f.store.Path(id)
	loading, release := make(chan struct{}, 2), make(chan struct{})
	var reads atomic.Int32
	f.store.openRead = func(p string) (*os.File, os.FileInfo, error) {
		if p == path {
			reads.Add(1)
			loading <- struct{}{}
			<-release
		}
		return openRegular(p)
	}
	opened := make(chan *live, 2)
	for range 2 {
		go func() {
			l, err := f.m.open(ctx, id)
			if err != nil {
				t.Error(err)
			}
			opened <- l
		}()
	}
	select {
	case <-loading:
	case <-time.After(10 * time.Second):
		t.Fatal("the open did not start loading")
	}
	answered := make(chan bool, 1)
	go func() { answered <- f.m.Cancel("20261203-000000-aaaaaa", "") }()
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop of another session waited for this session's file")
	}
	close(release)
	if a, b := <-opened, <-opened; a == nil || a != b {
		t.Errorf("two opens of one session: %p and %p, want the same live session", a, b)
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("the session's file was read %d times, want once", n)
	}
}

// TestRequestConflict: a request id sent again with the same body is a retry and answers
// the first result; with a different body, or for another kind of request, it is refused
// with a RequestConflictError and does nothing.
func TestRequestConflict(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{Text: "hi"})
	ctx := t.Context()
	id, created, err := f.m.CreateRequest(ctx, "c1", CreateOptions{Title: "one"})
	if err != nil || !created {
		t.Fatalf("create = %v, %v", created, err)
	}
	if again, created, err := f.m.CreateRequest(ctx, "c1", CreateOptions{Title: "one"}); err != nil || created || again != id {
		t.Errorf("the same create again = %s %v %v, want the first session", again, created, err)
	}
	if _, _, err := f.m.CreateRequest(ctx, "c1", CreateOptions{Title: "two"}); !errors.Is(err, ErrRequestConflict) {
		t.Errorf("create c1 with another title = %v, want ErrRequestConflict", err)
	}
	if _, _, err := f.m.Act(ctx, id, "a1", ActSetTitle, "Hello"); err != nil {
		t.Fatal(err)
	}
	if _, repeat, err := f.m.Act(ctx, id, "a1", ActSetTitle, "Hello"); err != nil || !repeat {
		t.Errorf("the same set_title again = %v %v, want a repeat", repeat, err)
	}
	for _, tt := range []struct{ action, arg string }{{ActArchive, ""}, {ActSetTitle, "Other"}} {
		if _, _, err := f.m.Act(ctx, id, "a1", tt.action, tt.arg); !errors.Is(err, ErrRequestConflict) {
			t.Errorf("%s reusing a set_title's request id = %v, want ErrRequestConflict", tt.action, err)
		}
	}
	sess, _, _ := f.m.Snapshot(ctx, id)
	if sess.Archived || sess.Title != "Hello" {
		t.Errorf("after the refused actions: archived %v title %q, want neither done", sess.Archived, sess.Title)
	}
	if _, err := f.m.SubmitRequest(ctx, id, "a1", Submission{Text: "hi"}); !errors.Is(err, ErrRequestConflict) {
		t.Errorf("a submit reusing an action's request id = %v, want ErrRequestConflict", err)
	}
	if _, err := f.m.SubmitRequest(ctx, id, "s1", Submission{Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if j := f.m.job(id); j != nil {
		j.Wait(ctx)
	}
	if acc, err := f.m.SubmitRequest(ctx, id, "s1", Submission{Text: "hi"}); err != nil || !acc.Repeat {
		t.Errorf("the same submit again = %+v %v, want a repeat", acc, err)
	}
	if _, err := f.m.SubmitRequest(ctx, id, "s1", Submission{Text: "something else"}); !errors.Is(err, ErrRequestConflict) {
		t.Errorf("a submit with another text = %v, want ErrRequestConflict", err)
	}
	if _, err := f.m.SubmitRequest(ctx, id, "s1", Submission{Text: "hi", Uploads: []model.Part{model.TextPart("a file")}}); !errors.Is(err, ErrRequestConflict) {
		t.Errorf("a submit with the same text and an upload = %v, want ErrRequestConflict", err)
	}
	if _, _, err := f.m.Act(ctx, id, "s1", ActArchive, ""); !errors.Is(err, ErrRequestConflict) {
		t.Errorf("an archive reusing a submit's request id = %v, want ErrRequestConflict", err)
	}
}
