package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/hosts/tools"
	"myco.dev/internal/fakemodel"
)

// TestCreateDir: a session's directory is the one asked for, cleaned; else a child's
// parent's; else the service's. A directory that cannot be used refuses the create with a
// DirError that says why, and nothing is made.
func TestCreateDir(t *testing.T) {
	serverDir, proj := t.TempDir(), t.TempDir()
	f := newManager(t, ManagerOptions{Dir: serverDir})
	ctx := t.Context()
	dirOf := func(id string) string {
		t.Helper()
		s := loadFresh(t, f.store, id)
		return s.Cwd
	}
	plain, err := f.m.Create(ctx, CreateOptions{})
	if err != nil || dirOf(plain) != serverDir {
		t.Fatalf("Create without a directory: %v, cwd %q; want the service's %s", err, dirOf(plain), serverDir)
	}
	in, err := f.m.Create(ctx, CreateOptions{Cwd: proj + "/./"})
	if err != nil || dirOf(in) != proj {
		t.Fatalf("Create in %s/./: %v, cwd %q; want it cleaned", proj, err, dirOf(in))
	}
	child, err := f.m.Create(ctx, CreateOptions{Parent: in, Hidden: true})
	if err != nil || dirOf(child) != proj {
		t.Errorf("a child of a session in %s: %v, cwd %q; want the parent's", proj, err, dirOf(child))
	}
	fork, err := f.m.Create(ctx, CreateOptions{Parent: in, Fork: true, Hidden: true})
	if err != nil || dirOf(fork) != proj {
		t.Errorf("a fork of a session in %s: %v, cwd %q; want the parent's", proj, err, dirOf(fork))
	}
	other := t.TempDir()
	elsewhere, err := f.m.Create(ctx, CreateOptions{Parent: in, Fork: true, Hidden: true, Cwd: other})
	if err != nil || dirOf(elsewhere) != other {
		t.Errorf("a fork that names %s: %v, cwd %q", other, err, dirOf(elsewhere))
	}

	file := filepath.Join(proj, "file.txt")
	os.WriteFile(file, []byte("x"), 0o644)
	locked := filepath.Join(proj, "locked")
	os.Mkdir(locked, 0o000)
	t.Cleanup(func() { os.Chmod(locked, 0o700) })
	cases := []struct{ name, dir, problem string }{
		{"relative", "src/app", "is not an absolute path"},
		{"missing", filepath.Join(proj, "nope"), "does not exist"},
		{"a file", file, "is not a directory"},
	}
	if os.Geteuid() != 0 { // root reads every directory
		cases = append(cases, struct{ name, dir, problem string }{"unreadable", locked, "is not readable"})
	}
	before, _ := f.store.List(ctx)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.m.Create(ctx, CreateOptions{Cwd: tt.dir})
			de, ok := errors.AsType[*DirError](err)
			if !ok || !errors.Is(err, ErrBadDir) || de.Dir != tt.dir || !strings.Contains(de.Problem, tt.problem) {
				t.Errorf("Create in %q = %v, want a DirError that says it %s", tt.dir, err, tt.problem)
			}
		})
	}
	if after, _ := f.store.List(ctx); len(after) != len(before) {
		t.Errorf("refused creates made sessions: %d before, %d after", len(before), len(after))
	}
}

// TestListAndSnapshotDir: the listing and the snapshot carry each session's directory (the
// service's for a session saved before directories were kept), and the listing filters by
// it.
func TestListAndSnapshotDir(t *testing.T) {
	serverDir, a, b := t.TempDir(), t.TempDir(), t.TempDir()
	f := newManager(t, ManagerOptions{Dir: serverDir})
	ctx := t.Context()
	inA, _ := f.m.Create(ctx, CreateOptions{Cwd: a})
	inB, _ := f.m.Create(ctx, CreateOptions{Cwd: b})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	old := &Session{ID: NewID(now), Created: now, Model: "fake"} // saved before cwd was kept
	if err := f.store.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	if s, _, err := f.m.Snapshot(ctx, old.ID); err != nil || s.Cwd != serverDir {
		t.Errorf("Snapshot of an old session: cwd %q, %v; want %s", s.Cwd, err, serverDir)
	}
	if s, _, err := f.m.Snapshot(ctx, inA); err != nil || s.Cwd != a {
		t.Errorf("Snapshot: cwd %q, %v; want %s", s.Cwd, err, a)
	}
	for _, tt := range []struct {
		dir  string
		want []string
	}{
		{a, []string{inA}},
		{b + "/", []string{inB}},
		{serverDir, []string{old.ID}},
		{"", []string{inB, inA, old.ID}},
	} {
		list, err := f.m.List(ctx, ListOptions{Cwd: tt.dir})
		var got []string
		for _, l := range list {
			got = append(got, l.ID)
			if l.Cwd == "" {
				t.Errorf("List: %s has no cwd", l.ID)
			}
		}
		if err != nil || strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("List(cwd %q) = %v, %v; want %v", tt.dir, got, err, tt.want)
		}
	}
}

// TestToolsWorkInTheSessionDirectory: every tool call carries the session's directory, the
// runtime notes' # Session block names it, and a session's prompt is read for it.
func TestToolsWorkInTheSessionDirectory(t *testing.T) {
	proj := t.TempDir()
	var promptDirs []string
	f := newManager(t, ManagerOptions{Dir: t.TempDir(), Prompt: func(dir string) ([]string, PreludeWatcher, error) {
		promptDirs = append(promptDirs, dir)
		return []string{"# Guidance of " + dir}, nil, nil
	}}, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "x")}}, fakemodel.Turn{Text: "done"})
	var seen string
	f.host.tools.run = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		seen, _ = tools.WorkDirFrom(ctx)
		return model.ToolResult{CallID: c.ID, Text: "ok"}
	}
	ctx := t.Context()
	id, err := f.m.Create(ctx, CreateOptions{Cwd: proj})
	if err != nil {
		t.Fatal(err)
	}
	j, err := f.m.Submit(ctx, id, model.TextPart("work"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if seen != proj {
		t.Errorf("the tool call ran with directory %q, want %s", seen, proj)
	}
	if len(promptDirs) != 1 || promptDirs[0] != proj {
		t.Errorf("the prompt was read for %q, want %s", promptDirs, proj)
	}
	body := string(f.srv.Requests()[0].Body)
	var req struct {
		System json.RawMessage `json:"system"`
	}
	json.Unmarshal(f.srv.Requests()[0].Body, &req)
	if !strings.Contains(string(req.System), "# Guidance of "+proj) {
		t.Errorf("the system prompt lacks the directory's guidance: %s", req.System)
	}
	if !strings.Contains(body, "directory: "+proj+" (on local, bash starts here") {
		t.Errorf("the runtime notes do not name the directory:\n%s", body)
	}
}
