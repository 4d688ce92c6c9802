package cli

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestChatHelpMatchesDocs keeps /help and docs/cli.md's chat section in agreement: every
// command of the help (with its arguments) is in the docs' table, and every command of
// the table is in the help.
func TestChatHelpMatchesDocs(t *testing.T) {
	doc, err := os.ReadFile("../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "# myco --mode cli: the terminal chat")
	if !ok {
		t.Fatal("docs/cli.md has no section # myco --mode cli: the terminal chat")
	}
	_, cmds, ok := strings.Cut(chatHelp, "\nCommands:\n")
	if !ok {
		t.Fatal("chatHelp has no Commands: list")
	}
	cmds, _, _ = strings.Cut(cmds, "\n\n")
	var docs []string // the commands in the first column of the chat section's tables
	for _, m := range regexp.MustCompile("(?m)^\\| (`/[^|]*)\\|").FindAllStringSubmatch(section, -1) {
		for _, c := range regexp.MustCompile("`(/[^`]+)`").FindAllStringSubmatch(m[1], -1) {
			docs = append(docs, c[1])
		}
	}
	var help []string
	for _, line := range strings.Split(cmds, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "/") {
			continue // a continued description
		}
		usage, _, _ := strings.Cut(line, "  ")
		for _, c := range strings.Split(usage, ", ") {
			help = append(help, c)
			if !slices.Contains(docs, c) {
				t.Errorf("/help lists %q; docs/cli.md's chat table does not", c)
			}
		}
	}
	if len(help) < 10 {
		t.Fatalf("found %d commands in chatHelp, want the whole list: %q", len(help), help)
	}
	for _, c := range docs {
		if !slices.Contains(help, c) {
			t.Errorf("docs/cli.md's chat table has %q; /help does not", c)
		}
	}
}
