package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/internal/fakemodel"
)

// readFiles reads dir byte for byte: each file's mode and content, each symlink's target.
func readFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, _ := os.Lstat(p)
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "-> " + target
		case info.IsDir():
			out[rel] = "dir"
		default:
			b, _ := os.ReadFile(p)
			out[rel] = info.Mode().Perm().String() + " " + string(b)
		}
		return nil
	})
	return out
}

func sameFiles(a, b map[string]string) string {
	var diffs []string
	for k, v := range a {
		if b[k] != v {
			diffs = append(diffs, fmt.Sprintf("%s: %q, want %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: missing, want %q", k, v))
		}
	}
	return strings.Join(diffs, "; ")
}

// TestBrowserChanges (issue 30): a turn changes a project with the editor and bash; its
// message on the session page says how many files it changed, the Changes view lists
// them with their diffs (line numbers, the path a link to the file page at the changed
// line), and its real controls put the files on disk back: Undo, Redo, a conflict (a file
// changed by hand) listed with a checkbox per file and overwritten only when asked,
// Revert of one file. Its screens are saved in light and dark, wide and narrow, and axe
// finds nothing serious on them.
func TestBrowserChanges(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "proj")
	os.MkdirAll(dir, 0o755)
	for name, data := range map[string]string{
		"main.go":   "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n",
		"README.md": "# Demo\n\nAn old line.\n",
		"old.txt":   "to be removed\n",
		"build.sh":  "#!/bin/sh\ngo build ./...\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	view, _ := json.Marshal(map[string]string{"command": "view", "path": filepath.Join(dir, "main.go")})
	edit, _ := json.Marshal(map[string]string{"command": "str_replace", "path": filepath.Join(dir, "main.go"),
		"old_str": "\tfmt.Println(\"hello\")\n", "new_str": "\tname := \"world\"\n\tfmt.Println(\"hello,\", name)\n"})
	f := newFixture(t,
		fakemodel.Turn{Text: "Reading main.go.", ToolCalls: []fakemodel.ToolCall{{ID: "v1", Name: "str_replace_based_edit_tool", Args: string(view)}}},
		fakemodel.Turn{Text: "Changing it.", ToolCalls: []fakemodel.ToolCall{{ID: "e1", Name: "str_replace_based_edit_tool", Args: string(edit)},
			bash("b1", "sed -i 's/An old line/A new line/' README.md && rm old.txt && chmod +x build.sh && mkdir -p internal/greet && printf 'package greet\\n\\nconst Name = \"world\"\\n' > internal/greet/greet.go")}},
		fakemodel.Turn{Text: "Done: main.go greets the world."},
	)
	before := readFiles(t, dir)

	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(f.srv.URL+"s", url.Values{"cwd": {dir}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	page := f.srv.origin() + resp.Header.Get("Location")

	b := newBrowser(t)
	tb := newTab(t, b, "changes")
	tb.navigate(page)
	tb.waitLive()
	tb.send("Make main greet the world")
	tb.wait("the answer", `document.querySelector("#status .idle") && [...document.querySelectorAll("#messages .msg.assistant")].some((m) => m.textContent.includes("greets the world"))`)
	tb.wait("the turn's changes line", `document.querySelector(".turn-changes a")?.textContent === "5 files changed"`)
	after := readFiles(t, dir)

	tb.clickAndLoad(".turn-changes a")
	tb.wait("the Changes view", `document.querySelectorAll("#changes .file-change").length === 5`)
	// main.go's diff: its numbers, and its path opens the file page at the first change.
	if href := eval[string](tb, `[...document.querySelectorAll("#changes .file-change a.path")].find((a) => a.textContent === "main.go")?.getAttribute("href") ?? ""`); !strings.HasSuffix(href, "files/main.go?line=6#L6") {
		t.Errorf("main.go's link = %q, want the file page at line 6", href)
	}
	if got := eval[string](tb, `[...document.querySelectorAll("#changes .file-change[aria-label='modified main.go'] tr.add td.ln:nth-child(2)")].map((td) => td.dataset.ln).join(",")`); got != "6,7" {
		t.Errorf("the added lines of main.go are numbered %q, want 6,7", got)
	}
	if got := eval[string](tb, `[...document.querySelectorAll("#changes .file-change")].map((a) => a.getAttribute("aria-label")).join("; ")`); !strings.Contains(got, "deleted old.txt") || !strings.Contains(got, "added internal/greet/greet.go") {
		t.Errorf("the files listed: %s", got)
	}
	tb.axe(t, axeSource(t), "the Changes view")

	// Screens, light and dark, wide and narrow.
	screens(t, tb, "changes", "")
	screens(t, tb, "changes-code", `(document.querySelector("[aria-label='modified main.go']").scrollIntoView(), true)`)

	// Undo: every file on disk as before the turn. Its answer is held back until the
	// stream's reload of the view has landed (as on a slow link): the answer still shows.
	tb.holdFetch("POST", "/undo", 1500)
	tb.click("#undo-turn")
	tb.wait("the stream's reload before the answer", `document.querySelector("#redo-turn") && !document.querySelector("#changes-done .banner")`)
	tb.wait("the undo's answer", `document.querySelector("#changes-done .banner")?.textContent.includes("put back") && document.querySelector("#redo-turn")`)
	if d := sameFiles(readFiles(t, dir), before); d != "" {
		t.Errorf("after Undo: %s", d)
	}
	// Redo: as after it.
	tb.click("#redo-turn")
	tb.wait("the redo's answer", `document.querySelector("#changes-done .banner") && document.querySelector("#undo-turn")`)
	if d := sameFiles(readFiles(t, dir), after); d != "" {
		t.Errorf("after Redo: %s", d)
	}

	// A file changed by hand: Undo is refused, the file listed with its checkbox, nothing
	// written; overwriting it puts everything back.
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Demo\n\nBy hand.\n"), 0o644)
	edited := readFiles(t, dir)
	tb.click("#undo-turn")
	tb.wait("the conflict", `document.querySelector("#changes form.conflicts input[name=overwrite][value='README.md']")`)
	if d := sameFiles(readFiles(t, dir), edited); d != "" {
		t.Errorf("a refused Undo wrote: %s", d)
	}
	tb.axe(t, axeSource(t), "the conflict")
	screens(t, tb, "changes-conflict", "")
	tb.click("#changes form.conflicts button[type=submit]")
	tb.wait("the overwriting undo's answer", `document.querySelector("#changes-done .banner")?.textContent.includes("put back") && !document.querySelector("#changes form.conflicts")`)
	if d := sameFiles(readFiles(t, dir), before); d != "" {
		t.Errorf("after Undo overwriting README.md: %s", d)
	}

	// Redo, then Revert of main.go alone.
	tb.click("#redo-turn")
	tb.wait("the redo's answer", `document.querySelector("#undo-turn")`)
	tb.click(`#changes button[aria-label="Revert main.go"]`)
	tb.wait("the revert's answer", `document.querySelector("#changes-done .banner")?.textContent.includes("1 file(s) put back")`)
	want := map[string]string{}
	for k, v := range after {
		want[k] = v
	}
	want["main.go"] = before["main.go"]
	if d := sameFiles(readFiles(t, dir), want); d != "" {
		t.Errorf("after Revert of main.go: %s", d)
	}
	// A turn that runs: its line on the session page follows its batches through the
	// stream, and its Changes view says it runs and offers no Undo.
	gate, open := f.gate("live")
	f.model.Script(
		fakemodel.Turn{Text: "One.", ToolCalls: []fakemodel.ToolCall{bash("l1", "echo one > live.txt")}},
		fakemodel.Turn{Text: "Waiting.", ToolCalls: []fakemodel.ToolCall{bash("l2", gate)}},
		fakemodel.Turn{Text: "Live done."},
	)
	tb.navigate(page)
	tb.waitLive()
	tb.send("Write live.txt and wait")
	tb.wait("the running turn's line", `document.querySelector("#tool-l2.running") && [...document.querySelectorAll(".turn-changes a")].some((a) => a.textContent === "1 file changed")`)
	tb.navigate(eval[string](tb, `[...document.querySelectorAll(".turn-changes a")].pop().href`))
	tb.wait("the running turn's view", `document.querySelector("#changes h2")?.textContent.includes("the turn runs") && !document.querySelector("#undo-turn")`)
	open()
	tb.wait("the view once the turn ended", `document.querySelector("#undo-turn")`)

	// Edit of the first message with "Restore code and conversation": every turn's changes
	// taken away (the later turn's live.txt too), and the session goes on from there.
	f.model.Script(fakemodel.Turn{Text: "Edited and sent again."})
	tb.navigate(page)
	tb.waitLive()
	tb.click("#m-t1-0 details.edit-message summary")
	tb.click("#m-t1-0 details.edit-message input[name=restore]")
	tb.click("#m-t1-0 details.edit-message button[type=submit]")
	tb.wait("the edited turn's answer", `[...document.querySelectorAll("#messages .msg.assistant")].some((m) => m.textContent.includes("Edited and sent again")) && document.querySelector("#status .idle")`)
	if d := sameFiles(readFiles(t, dir), before); d != "" {
		t.Errorf("after Edit with Restore code and conversation: %s", d)
	}

	// The list page says how much space the snapshots take.
	tb.navigate(f.srv.URL)
	tb.wait("the snapshots' space", `/take [0-9.]+ (B|KB|MB) on this machine/.test(document.querySelector("#snapshot-space")?.textContent ?? "")`)

	for _, p := range tb.problems() {
		t.Errorf("page problem: %s", p)
	}
}

// TestBrowserChildChanges (issue 30): a parent's tree of child sessions shows each child's
// changed files, linked to the child's Changes view.
func TestBrowserChildChanges(t *testing.T) {
	t.Parallel()
	f := newFixture(t,
		fakemodel.Turn{Text: "Writing two files.", ToolCalls: []fakemodel.ToolCall{bash("w1", "printf 'a\\nb\\n' > child-one.txt && echo c > child-two.txt")}},
		fakemodel.Turn{Text: "The child is done."},
	)
	page := f.newSession()
	root := path.Base(strings.TrimSuffix(page, "/"))
	var created struct {
		ID string `json:"session_id"`
	}
	f.postJSON("api/sessions", `{"request_id":"c1","parent_session":"`+root+`","title":"The writer"}`, &created)
	f.postJSONAs("api/sessions/"+created.ID+"/actions", `{"request_id":"s1","action":"submit","text":"write","wait":true}`, "")
	f.waitFile(filepath.Join(f.srv.cmd.Dir, "child-two.txt"), "c\n")

	b := newBrowser(t)
	tb := newTab(t, b, "child-changes")
	tb.navigate(page)
	tb.waitLive()
	line := `document.querySelector("#tree #changes-` + created.ID + ` a")`
	tb.wait("the child's changed files in the tree", line+`?.textContent.includes("2 files changed")`)
	if got := eval[string](tb, line+`.getAttribute("href")`); !strings.HasSuffix(got, "/s/"+created.ID+"/changes") {
		t.Errorf("the tree's changes line links %q, want the child's Changes view", got)
	}
	tb.click("#tree summary")
	tb.clickAndLoad("#tree #changes-" + created.ID + " a")
	tb.wait("the child's Changes view", `["child-one.txt", "child-two.txt"].every((n) => [...document.querySelectorAll("#changes .change-list a")].some((a) => a.textContent === n))`)
}
