package sessions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"myco.dev/agent/model"
	"myco.dev/hosts/snapshot"
	"myco.dev/internal/fakemodel"
)

// snapHost is a testHost whose one host keeps its snapshots in a real store; failRestore
// makes the next restore that writes fail after it wrote.
type snapHost struct {
	*testHost
	st *snapshot.Store

	mu          sync.Mutex // guards the fields below
	prunes      int
	failRestore bool
	watched     []bool // each capture's Watch, in order
}

func (h *snapHost) Capture(ctx context.Context, _ string, r snapshot.CaptureRequest) (snapshot.CaptureResult, error) {
	h.mu.Lock()
	h.watched = append(h.watched, r.Watch)
	h.mu.Unlock()
	return h.st.Capture(ctx, r)
}

func (h *snapHost) Diff(ctx context.Context, _ string, from, to snapshot.ID, o snapshot.DiffOptions) (*snapshot.Diff, error) {
	return h.st.Diff(ctx, from, to, o)
}

func (h *snapHost) Restore(ctx context.Context, _ string, r snapshot.RestoreRequest) (*snapshot.RestoreResult, error) {
	res, err := h.st.Restore(ctx, r)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failRestore && !r.DryRun {
		h.failRestore = false
		return nil, errors.New("the connection ended during the restore")
	}
	return res, err
}

func (h *snapHost) Prune(ctx context.Context, _, owner string, keep []snapshot.ID) (snapshot.PruneResult, error) {
	h.mu.Lock()
	h.prunes++
	h.mu.Unlock()
	return h.st.Prune(ctx, owner, keep)
}

// writeTools is fakeTools whose calls write the file their "what" names, in dir.
func writeTools(dir string) *fakeTools {
	return &fakeTools{run: func(ctx context.Context, call model.ToolCall) model.ToolResult {
		name := strings.TrimSuffix(strings.TrimPrefix(string(call.Input), `{"what":"`), `"}`)
		os.WriteFile(filepath.Join(dir, name), []byte("written by "+call.ID+"\n"), 0o644)
		return model.ToolResult{CallID: call.ID, Text: "wrote " + name}
	}}
}

// The service captures around each batch, saves the captures in the checkpoint, and
// undoes, redoes and reverts with conflicts; a restore cut short is completed before the
// next; the model's next input is told; the snapshots of turns past keep_turns are pruned.
func TestUndoRedo(t *testing.T) {
	dir := t.TempDir()
	st, err := snapshot.Open(snapshot.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	os.WriteFile(filepath.Join(dir, "kept.txt"), []byte("kept\n"), 0o644)
	f := newManager(t, ManagerOptions{Snapshots: SnapshotOptions{Enabled: true, KeepTurns: 1}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "a.txt")}}, fakemodel.Turn{Text: "wrote a"},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c2", "b.txt")}}, fakemodel.Turn{Text: "wrote b"})
	host := &snapHost{testHost: f.host, st: st}
	host.tools = writeTools(dir)
	f.m.o.Tools = host
	ctx := t.Context()
	id, err := f.m.Create(ctx, CreateOptions{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	sub := f.m.Subscribe([]string{id}, "")
	defer sub.Close()
	j, err := f.m.Submit(ctx, id, model.TextPart("write a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	us := collect(t, sub, idle)
	var changed []string
	for _, u := range us {
		if u.Type == UpdateChanges {
			for _, f := range u.Files {
				changed = append(changed, f.Status+" "+f.Path)
			}
		}
	}
	if strings.Join(changed, ",") != "added a.txt" {
		t.Errorf("changes events = %q, want added a.txt", changed)
	}
	sess, _, _ := f.m.Snapshot(ctx, id)
	if caps := sess.Latest().Entries[2].Snapshots; len(caps) != 1 || caps[0].Before == "" || caps[0].After == "" {
		t.Fatalf("the batch's entry holds captures %+v", caps)
	}
	// The turn's first capture walks the tree; the one after the batch trusts the watch.
	host.mu.Lock()
	if want := []bool{false, true}; !slices.Equal(host.watched, want) {
		t.Errorf("the captures' Watch = %v, want %v", host.watched, want)
	}
	host.mu.Unlock()
	ch, err := f.m.Changes(ctx, id, ChangesQuery{Turn: &TurnRef{Turn: 0}})
	if err != nil || len(ch.Hosts) != 1 || len(ch.Hosts[0].Diff.Changes) != 1 {
		t.Fatalf("Changes = %+v, %v", ch, err)
	}

	// A restore cut short (the host's answer lost) stays journaled, and is completed
	// before the next one.
	host.failRestore = true
	if _, err := f.m.Restore(ctx, id, RestoreRequest{Op: OpUndo, Turn: &TurnRef{Turn: 0}}); err == nil {
		t.Fatal("a restore whose host failed succeeded")
	}
	sess, _, _ = f.m.Snapshot(ctx, id)
	if p := sess.pendingRestore(); p == nil {
		t.Fatal("the restore cut short is not pending")
	}
	if _, err := f.m.Restore(ctx, id, RestoreRequest{Op: OpUndo, Turn: &TurnRef{Turn: 0}}); !errors.Is(err, ErrNotUndoable) {
		t.Errorf("an undo after the one completed = %v, want ErrNotUndoable", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a.txt after the undo: %v, want it gone", err)
	}
	if !loadFresh(t, f.store, id).undone(sess.Latest().ID, 0) {
		t.Error("the completed undo is not in the file")
	}

	// Redo, then a conflict.
	if _, err := f.m.Restore(ctx, id, RestoreRequest{Op: OpRedo, Turn: &TurnRef{Turn: 0}}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("by hand\n"), 0o644)
	_, err = f.m.Restore(ctx, id, RestoreRequest{Op: OpUndo, Turn: &TurnRef{Turn: 0}})
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Files) != 1 || ce.Files[0].Path != "a.txt" {
		t.Fatalf("undo over a file changed by hand = %v, want a conflict naming a.txt", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "by hand\n" {
		t.Errorf("a refused undo wrote a.txt: %q", b)
	}
	out, err := f.m.Restore(ctx, id, RestoreRequest{Op: OpRevert, Turn: &TurnRef{Turn: 0}, Path: "a.txt", Overwrite: []string{"a.txt"}})
	if err != nil || len(out.Restored) != 1 {
		t.Fatalf("revert of a.txt = %+v, %v", out, err)
	}

	// The next turn's input tells the model; its end prunes (2 turns, 1 kept).
	j, err = f.m.Submit(ctx, id, model.TextPart("write b"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	body := string(f.srv.Requests()[2].Body)
	if !strings.Contains(body, "[myco: files]") || !strings.Contains(body, "a.txt") {
		t.Error("the turn after the revert was not told which files changed")
	}
	if host.prunes == 0 {
		t.Error("the session's snapshots were not pruned past keep_turns")
	}
	if _, err := f.m.Restore(ctx, id, RestoreRequest{Op: OpUndo, Turn: &TurnRef{Turn: 4}}); err != nil {
		t.Errorf("undo of the last turn after the prune: %v", err)
	}
}

// An edit that restores code and conversation puts the files back as they were before the
// edited message's turn (every later turn's changes taken away), tells the model, and
// refuses, sending nothing, when a file changed since.
func TestEditRestore(t *testing.T) {
	dir := t.TempDir()
	st, err := snapshot.Open(snapshot.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := newManager(t, ManagerOptions{Snapshots: SnapshotOptions{Enabled: true}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "a.txt")}}, fakemodel.Turn{Text: "wrote a"},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c2", "b.txt")}}, fakemodel.Turn{Text: "wrote b"},
		fakemodel.Turn{Text: "edited"})
	host := &snapHost{testHost: f.host, st: st}
	host.tools = writeTools(dir)
	f.m.o.Tools = host
	ctx := t.Context()
	id, err := f.m.Create(ctx, CreateOptions{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"write a", "write b"} {
		j, err := f.m.Submit(ctx, id, model.TextPart(text))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sess, _, _ := f.m.Snapshot(ctx, id)
	th := sess.Latest()
	second := lastStart(th)

	// A file changed by hand since: refused, nothing sent.
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("by hand\n"), 0o644)
	if _, err := f.m.EditRestore(ctx, id, th.ID, second, "write nothing"); !errors.Is(err, ErrConflict) {
		t.Fatalf("EditRestore over a file changed by hand = %v, want a conflict", err)
	}
	if n := len(f.srv.Requests()); n != 4 {
		t.Errorf("the refused edit sent a request: %d requests, want 4", n)
	}

	// Back as the turn left it, the edit of the first message takes both turns' files away.
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("written by c2\n"), 0o644)
	j, err := f.m.EditRestore(ctx, id, th.ID, 0, "write nothing")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after the edit that restores: %v, want it gone", name, err)
		}
	}
	body := string(f.srv.Requests()[4].Body)
	if !strings.Contains(body, "[myco: files]") || !strings.Contains(body, "a.txt") || !strings.Contains(body, "b.txt") {
		t.Errorf("the edited turn was not told which files changed:\n%s", body)
	}
}
