package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"myco.dev/api"
	"myco.dev/client"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/openapitest"
)

// tree is what a directory holds, path by path: a file's mode and content, a symlink's
// target, a directory.
type tree map[string]string

// readTree reads dir byte for byte (modes included).
func readTree(t *testing.T, dir string) tree {
	t.Helper()
	out := tree{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "symlink -> " + target
		case info.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = info.Mode().Perm().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffTrees says how got differs from want, or "".
func diffTrees(got, want tree) string {
	var b strings.Builder
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if got[k] != want[k] {
			b.WriteString(k + ": got " + trunc(got[k]) + ", want " + trunc(want[k]) + "\n")
		}
	}
	return b.String()
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	if s == "" {
		return "(absent)"
	}
	return s
}

// changesProject writes the project a turn changes: a directory that is not a git
// repository, with a .gitignore that leaves node_modules out.
func changesProject(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "proj")
	files := map[string]string{
		"a.txt": "hello old world\n", "b.txt": "line one\nline old\n", "c.txt": "to delete\n", "d.txt": "to move\n",
		"run.sh": "#!/bin/sh\necho hi\n", ".gitignore": "node_modules/\n", "node_modules/lib.js": "lib\n",
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// changesTurns is a turn that views a.txt, then edits it with the editor and changes the
// rest with bash: sed -i, >, rm, mv, chmod +x, a new symlink, a file in a new
// subdirectory, a file in the ignored node_modules and one over the size cap.
func changesTurns(dir string) []fakemodel.Turn {
	view, _ := json.Marshal(map[string]string{"command": "view", "path": filepath.Join(dir, "a.txt")})
	edit, _ := json.Marshal(map[string]string{"command": "str_replace", "path": filepath.Join(dir, "a.txt"), "old_str": "old", "new_str": "new"})
	bash, _ := json.Marshal(map[string]string{"command": "sed -i 's/old/new/' b.txt && echo made > new.txt && rm c.txt && mv d.txt e.txt && chmod +x run.sh && " +
		"ln -s a.txt link && mkdir -p sub/dir && echo deep > sub/dir/f.txt && echo dep > node_modules/dep.js && head -c 9000 /dev/zero | tr '\\0' x > big.txt"})
	return []fakemodel.Turn{
		{Text: "Reading.", ToolCalls: []fakemodel.ToolCall{{ID: "v1", Name: "str_replace_based_edit_tool", Args: string(view)}}},
		{Text: "Changing.", ToolCalls: []fakemodel.ToolCall{{ID: "e1", Name: "str_replace_based_edit_tool", Args: string(edit)}, {ID: "b1", Name: "bash", Args: string(bash)}}},
		{Text: "Done."},
	}
}

// runInOK runs myco with args in dir on home and returns its stdout; a failure ends the test.
func runInOK(t *testing.T, home, dir string, args ...string) string {
	t.Helper()
	out, errOut, status := runIn(t, dir, home, args...)
	if status != 0 {
		t.Fatalf("myco %s: exit status %d\nstderr:\n%s", strings.Join(args, " "), status, errOut)
	}
	return out
}

// TestChangesUndoRedo (issue 30): a turn of myco -p changes a project that is not a git
// repository with the editor and with bash; its --json prints a changes event; after a
// restart (the server, a new process) the API lists the turn's changes, and an undo puts
// every file back byte for byte (the ignored node_modules and the file over the size cap
// left alone), a redo puts the turn's result back, a file changed by hand since is a
// conflict that is refused and listed, and written only when overwrite names it; the
// model's next turn is told which files changed.
func TestChangesUndoRedo(t *testing.T) {
	dir := changesProject(t)
	fake := fakemodel.New(t, append(changesTurns(dir), fakemodel.Turn{Text: "Noted."})...)
	home := profileHome(t, "anthropic-messages", fake.URL, "[snapshots]\nmax_file_bytes = 4096\n")
	before := readTree(t, dir)

	out := runInOK(t, home, dir, "--json", "-p", "change the files")
	var id string
	var changes []api.ChangedFile
	for _, ev := range events(t, out) {
		if ev["type"] == "session" {
			id, _ = ev["session"].(string)
		}
		if ev["type"] == "changes" {
			b, _ := json.Marshal(ev["files"])
			var fs []api.ChangedFile
			json.Unmarshal(b, &fs)
			changes = append(changes, fs...)
		}
	}
	if id == "" || len(changes) == 0 {
		t.Fatalf("no session or no changes event in --json:\n%s", out)
	}
	after := readTree(t, dir)
	if after["a.txt"] != "-rw-r--r-- hello new world\n" || after["run.sh"][:10] != "-rwxr-xr-x" {
		t.Fatalf("the turn did not run as scripted: %v", after)
	}

	_, u, stderr := startServer(t, home)
	c := client.New(u)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// Every answer is checked against the OpenAPI document.
	served, err := c.OpenAPI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapitest.Load(served)
	if err != nil {
		t.Fatal(err)
	}
	rec := &openapitest.Recorder{Doc: doc, Base: "/profiles/default/api", Next: http.DefaultTransport}
	c.HTTP = &http.Client{Transport: rec}
	defer func() {
		for _, e := range rec.Errors() {
			t.Errorf("an answer the document does not declare: %s", e)
		}
		if t.Failed() {
			t.Logf("server:\n%s", stderr)
		}
	}()
	turn := 0
	ch, err := c.Changes(ctx, id, client.ChangesOptions{Turn: &turn})
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Hosts) != 1 || ch.Hosts[0].Host != "local" {
		t.Fatalf("changes hosts = %+v, want local", ch.Hosts)
	}
	status := map[string]string{}
	for _, f := range ch.Hosts[0].Files {
		status[f.Path] = f.Status
		if f.Path == "big.txt" && !f.NotStored {
			t.Errorf("big.txt (9000 bytes, over the 4096 cap) is not reported as not stored: %+v", f)
		}
		if f.Path == "a.txt" && (f.Added != 1 || f.Deleted != 1 || !strings.Contains(f.Patch, "+hello new world")) {
			t.Errorf("a.txt: %+v, want +1 -1 with its patch", f)
		}
	}
	want := map[string]string{"a.txt": "modified", "b.txt": "modified", "c.txt": "deleted", "e.txt": "renamed", "run.sh": "modified",
		"link": "added", "new.txt": "added", "sub": "added", "sub/dir": "added", "sub/dir/f.txt": "added", "big.txt": "added"}
	for p, s := range want {
		if status[p] != s && !(strings.HasPrefix(p, "sub") && p != "sub/dir/f.txt") {
			t.Errorf("changes of %s = %q, want %q (all: %v)", p, status[p], s, status)
		}
	}
	for p := range status {
		if strings.HasPrefix(p, "node_modules") {
			t.Errorf("the ignored %s is listed as changed", p)
		}
	}

	// Undo: every file back as before the turn, but what was not captured.
	ans, err := c.UndoTurn(ctx, id, "undo-1", "", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := readTree(t, dir)
	// What was not captured stays: node_modules (ignored) and big.txt (over the cap, so
	// a redo could not bring it back), which the answer lists.
	wantBefore := maps(before, map[string]string{"node_modules/dep.js": after["node_modules/dep.js"], "big.txt": after["big.txt"]})
	if d := diffTrees(got, wantBefore); d != "" {
		t.Errorf("after the undo (%+v):\n%s", ans, d)
	}
	if len(ans.LeftAlone) != 1 || ans.LeftAlone[0].Path != "big.txt" || ans.LeftAlone[0].Reason != "not_stored" {
		t.Errorf("undo left alone %+v, want big.txt, not stored", ans.LeftAlone)
	}
	if _, err := c.UndoTurn(ctx, id, "undo-again", "", 0, nil); !client.IsCode(err, "not_undoable") {
		t.Errorf("a second undo = %v, want not_undoable", err)
	}
	if again, err := c.UndoTurn(ctx, id, "undo-1", "", 0, nil); err != nil || !again.Repeat {
		t.Errorf("the same request again = %+v, %v; want its answer, repeated", again, err)
	}

	// Redo: the turn's result back.
	if _, err := c.RedoTurn(ctx, id, "redo-1", "", 0, nil); err != nil {
		t.Fatal(err)
	}
	if d := diffTrees(readTree(t, dir), after); d != "" {
		t.Errorf("after the redo:\n%s", d)
	}

	// A file changed by hand since: the undo is refused, the file listed, nothing written.
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("by hand\n"), 0o644)
	edited := readTree(t, dir)
	_, err = c.UndoTurn(ctx, id, "undo-2", "", 0, nil)
	ce, ok := err.(*client.Error)
	if !ok || ce.Code != "conflict" || len(ce.Files) != 1 || ce.Files[0].Path != "b.txt" {
		t.Fatalf("undo over a file changed by hand = %v (%+v), want a conflict naming b.txt", err, ce)
	}
	if d := diffTrees(readTree(t, dir), edited); d != "" {
		t.Errorf("a refused undo wrote:\n%s", d)
	}
	if _, err := c.UndoTurn(ctx, id, "undo-3", "", 0, []string{"b.txt"}); err != nil {
		t.Fatal(err)
	}
	if d := diffTrees(readTree(t, dir), wantBefore); d != "" {
		t.Errorf("after the undo that overwrites b.txt:\n%s", d)
	}

	// The model's next turn is told which files changed.
	if _, err := c.Run(ctx, id, api.SubmitAction{RequestID: "next", Text: "what now?"}, 60); err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, "[myco: files]") || !strings.Contains(last, "b.txt") {
		t.Errorf("the next request does not tell the model of the files the undo changed:\n%s", trunc(last))
	}
}

// maps returns a copy of a with b's entries set.
func maps(a tree, b map[string]string) tree {
	out := tree{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// without returns a copy of t without the paths named.
func without(t tree, paths ...string) tree {
	out := tree{}
	for k, v := range t {
		if !slices.Contains(paths, k) {
			out[k] = v
		}
	}
	return out
}

// TestChildChangesInSnapshot (issue 30): with ?changes=true a parent's snapshot counts each
// child's changed files (and their lines); without it, the children come without.
func TestChildChangesInSnapshot(t *testing.T) {
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "w1", Name: "bash", Args: `{"command":"printf 'a\\nb\\n' > one.txt && echo c > two.txt"}`}}},
		fakemodel.Turn{Text: "Written."})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	_, u, _ := startServer(t, home)
	c := apiClient{t: t, base: strings.TrimSuffix(u, "/") + "/api"}
	code, root := c.post("/sessions", `{"request_id":"root","cwd":"`+t.TempDir()+`"}`)
	if code != 201 {
		t.Fatalf("create the root = %d %v", code, root)
	}
	rootID := root["session_id"].(string)
	code, child := c.post("/sessions", `{"request_id":"child","parent_session":"`+rootID+`"}`)
	if code != 201 {
		t.Fatalf("create the child = %d %v", code, child)
	}
	childID := child["session_id"].(string)
	if code, out := c.post("/sessions/"+childID+"/actions", `{"request_id":"s","action":"submit","text":"write","wait":true}`); code != 200 {
		t.Fatalf("submit = %d %v", code, out)
	}
	c.wait(childID)
	_, snap := c.get("/sessions/" + rootID + "?changes=true")
	kids, _ := snap["children"].([]any)
	if len(kids) != 1 {
		t.Fatalf("children = %v", snap["children"])
	}
	got, _ := kids[0].(map[string]any)["changes"].(map[string]any)
	if got["files"] != 2.0 || got["added"] != 3.0 || got["deleted"] != 0.0 {
		t.Errorf("the child's changes = %v, want 2 files, +3 −0", got)
	}
	_, plain := c.get("/sessions/" + rootID)
	if kid := plain["children"].([]any)[0].(map[string]any); kid["changes"] != nil {
		t.Errorf("without ?changes the child carries %v", kid["changes"])
	}
}
