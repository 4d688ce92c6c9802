package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"myco.dev/internal/fakemodel"
)

// TestChatTmuxToolOutput: a bash call's output shows in the pane while the call runs,
// before it ends; its end line says it exited 1, not ok; the meter is in the browser's
// words. A call stopped with Ctrl-C keeps on the screen what it printed before the stop,
// the lines that had not shown yet included.
func TestChatTmuxToolOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	goFile, pidFile := filepath.Join(dir, "go"), filepath.Join(dir, "pid")
	srv := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"echo first line; echo second line; until [ -e ` + goFile + ` ]; do sleep 0.02; done; echo last line; exit 1"}`}}},
		fakemodel.Turn{Text: "it failed", Usage: fakemodel.Usage{Input: 1234}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"echo before the stop; sleep 0.2; echo just before it; echo $$ > ` + pidFile + `; sleep 60"}`}}},
		fakemodel.Turn{Text: "next"})
	p := startPane(t, chatHome(t, srv.URL), "")

	p.say("run it", "→ bash @local")
	s := p.wait("the running call's output", func(s string) bool {
		return strings.Contains(s, "  │ first line\n") && strings.Contains(s, "  │ second line\n")
	})
	if strings.Contains(s, "← bash") {
		t.Fatalf("the output showed only once the call ended:\n%s", s)
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s = p.waitFor("context: 1.2k of 100k tokens (1%)", 1)
	if !strings.Contains(s, "  │ second line\n  │ last line\n← bash exit 1 (") {
		t.Errorf("the call's last line and its exit status 1 do not follow its output:\n%s", s)
	}
	if strings.Contains(s, "bash ok") || strings.Contains(s, "USER ") {
		t.Errorf("the pane says ok for a failed call, or the meter's old words:\n%s", s)
	}
	if n := strings.Count(s, "first line"); n != 2 { // the command in the header, and the output once
		t.Errorf("the first line shows %d times, want once in the header and once as output:\n%s", n, s)
	}
	if st := p.styled(); !regexp.MustCompile(`\x1b\[31m(\x1b\[\d+m)*← bash exit 1`).MatchString(st) {
		t.Errorf("the failed call's line is not red:\n%q", st)
	}

	p.say("stop it", "→ bash @local")
	deadline := time.Now().Add(10 * time.Second)
	pid := waitPID(t, pidFile, deadline)
	p.waitFor("  │ before the stop", 1)
	p.keys("C-c")
	s = p.waitFor("myco: interrupted", 1)
	waitGone(t, pid, deadline)
	if !strings.Contains(s, "  │ before the stop\n  │ just before it\n← bash stopped (") {
		t.Errorf("what the stopped call printed is not kept before its end line:\n%s", s)
	}
	p.say("go on", "next")
	p.waitPrompt("")
	p.keys("C-d")
	if code := p.exitStatus(); code != 0 {
		t.Errorf("Ctrl-D: exit status %d, want 0", code)
	}
}

// TestChatTmuxTable: an answer's table shows as aligned columns, fitted to the pane: at 80
// columns as it is, at 40 its wide column wrapped, never wider than the pane.
func TestChatTmuxTable(t *testing.T) {
	t.Parallel()
	const answer = "The packages:\n\n" +
		"| Package | Owns | Lines |\n" +
		"|---|---|--:|\n" +
		"| cli | the terminal front ends: -p and the chat | 1200 |\n" +
		"| termmd | the answer's Markdown for a terminal | 560 |\n\n" +
		"That is all."
	for _, tt := range []struct {
		width int
		want  string
	}{
		{80, "The packages:\n\n" +
			"Package │ Owns                                     │ Lines\n" +
			"────────┼──────────────────────────────────────────┼──────\n" +
			"cli     │ the terminal front ends: -p and the chat │  1200\n" +
			"termmd  │ the answer's Markdown for a terminal     │   560\n\n" +
			"That is all.\n"},
		{40, "The packages:\n\n" +
			"Package │ Owns                  │ Lines\n" +
			"────────┼───────────────────────┼──────\n" +
			"cli     │ the terminal front    │  1200\n" +
			"        │ ends: -p and the chat │\n" +
			"termmd  │ the answer's Markdown │   560\n" +
			"        │ for a terminal        │\n\n" +
			"That is all.\n"},
	} {
		t.Run(strconv.Itoa(tt.width), func(t *testing.T) {
			t.Parallel()
			srv := fakemodel.New(t, fakemodel.Turn{Text: answer})
			p := startPaneWidth(t, chatHome(t, srv.URL), "", tt.width)
			s := p.say("list the packages", "That is all.")
			if !strings.Contains(s, tt.want) {
				t.Errorf("the table is not laid out in %d columns:\n%s\nwant\n%s", tt.width, s, tt.want)
			}
			if strings.Contains(s, "|---|") || strings.Contains(s, "| cli |") {
				t.Errorf("the table shows as raw pipes:\n%s", s)
			}
			// No line of the table wider than the pane: the pane's lines, not joined where
			// they wrapped.
			for _, l := range strings.Split(p.run("capture-pane", "-p", "-t", "chat"), "\n") {
				if !strings.ContainsAny(l, "│─") {
					continue
				}
				if n := utf8.RuneCountInString(strings.TrimRight(l, " ")); n >= tt.width {
					t.Errorf("a line fills the pane's %d columns (it may have wrapped): %q", tt.width, l)
				}
			}
		})
	}
}
