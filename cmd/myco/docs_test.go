package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
)

// TestBrowserDocCurlExamples runs the curl examples of docs/browser.md verbatim against the
// real server, as an agent's bash would, and checks what they print.
func TestBrowserDocCurlExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/browser.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "### With curl")
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(after)
	if !ok || m == nil {
		t.Fatal("docs/browser.md has no sh block under ### With curl")
	}
	srv := fakemodel.New(t, fakemodel.Turn{Text: "42"})
	home := profileHome(t, "anthropic-messages", srv.URL, "")
	_, u, stderr := startServer(t, home)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/bash", "-e", "-c", m[1])
	cmd.Env = append(os.Environ(), "MYCO_SERVER_URL="+strings.TrimSuffix(u, "/"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the examples failed: %v\n%s\nserver:\n%s", err, out, stderr)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 5 {
		t.Fatalf("the examples printed %q, want five lines", lines)
	}
	if _, err := time.Parse(time.RFC3339Nano, lines[0]); err != nil {
		t.Errorf("accepted_at = %q: %v", lines[0], err)
	}
	for i, want := range []string{"", "42", "false", "2", "false"} {
		if i > 0 && lines[i] != want {
			t.Errorf("line %d = %q, want %q", i+1, lines[i], want)
		}
	}
}
