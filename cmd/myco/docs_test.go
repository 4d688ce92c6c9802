package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"myco.dev/client"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/needs"
)

// childAnswer is the child's answer in the recipe's test: what an answer of a real model
// has, and what a line-by-line reading of JSON loses (issue 22).
const childAnswer = "There are 154 files, counted with \"ls -A | wc -l\".\nA second line, with a comma, and \\ a backslash."

// grandchildScript is what the child's bash does in the recipe's test: it delegates in turn
// (a child with children), and its child ends while it still works, as the parent polled.
const grandchildScript = `set -e
api="$MYCO_SERVER_URL/api"; j='Content-Type: application/json'
me=$(curl -sf "$api/sessions?include_hidden=true" | jq -r '.sessions[] | select(.busy) | .session_id')
gc=$(curl -sf -X POST -H "$j" -d '{"request_id":"gc","parent_session":"'"$me"'"}' "$api/sessions" | jq -r .session_id)
curl -sf -X POST -H "$j" -d '{"request_id":"gc-task","action":"submit","text":"help","wait":true}' "$api/sessions/$gc/actions" | jq -r .answer
sleep 1`

// TestBrowserDocCurlExamples (issue 22) runs the curl examples of docs/browser.md verbatim
// against the real server, as an agent's bash would, with jq and without it, and checks what
// they print: the child's answer exactly as the model wrote it (commas, quotes, line
// breaks), after the child's turn ended, though the child's own child ended earlier.
func TestBrowserDocCurlExamples(t *testing.T) {
	needs.Program(t, "curl", "apt-get install curl")
	needs.Program(t, "jq", "apt-get install jq")
	doc, err := os.ReadFile("../../docs/browser.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "### With curl")
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(after)
	if !ok || m == nil {
		t.Fatal("docs/browser.md has no sh block under ### With curl")
	}
	for _, withJQ := range []bool{true, false} {
		name := map[bool]string{true: "jq", false: "sed"}[withJQ]
		t.Run(name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"command": grandchildScript})
			srv := fakemodel.New(t,
				fakemodel.Turn{Text: "Delegating a part.", ToolCalls: []fakemodel.ToolCall{{ID: "gc", Name: "bash", Args: string(args)}}},
				fakemodel.Turn{Text: "7, \"done\""},
				fakemodel.Turn{Text: childAnswer})
			home := profileHome(t, "anthropic-messages", srv.URL, "")
			_, u, stderr := startServer(t, home)
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "/bin/bash", "-e", "-c", m[1])
			cmd.Env = append(os.Environ(), "MYCO_SERVER_URL="+strings.TrimSuffix(u, "/"))
			if !withJQ {
				cmd.Env = append(cmd.Env, "PATH="+pathWithout(t, "jq"))
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the examples failed: %v\n%s\nserver:\n%s", err, out, stderr)
			}
			want := "done\n" + childAnswer + "\nfalse\n3\nfalse\n"
			if string(out) != want {
				t.Fatalf("the examples printed\n%q\nwant\n%q\nserver:\n%s", out, want, stderr)
			}
			// The child did have a child, which ended before it did.
			c := client.New(u)
			list, err := c.List(ctx, client.ListOptions{IncludeHidden: true})
			if err != nil {
				t.Fatal(err)
			}
			var child string
			for _, s := range list.Sessions {
				if s.ParentSession != "" && strings.Contains(s.Title, "Count the files") {
					child = s.SessionID
				}
			}
			snap, err := c.Snapshot(ctx, child, client.SnapshotOptions{})
			if err != nil || len(snap.Children) != 1 || snap.Children[0].LastTurn != "done" || snap.Answer != childAnswer {
				t.Errorf("the child's snapshot = %+v, %v; want its answer and one child, done", snap, err)
			}
		})
	}
}

// pathWithout returns a PATH that finds every program of this one's but name.
func pathWithout(t *testing.T, name string) string {
	dir := t.TempDir()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if e.Name() == name {
				continue
			}
			os.Symlink(filepath.Join(d, e.Name()), filepath.Join(dir, e.Name())) // the first one found wins, as in PATH
		}
	}
	if _, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
		t.Fatalf("%s is still found", name)
	}
	return dir
}
