package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"myco.dev/cli"
	"myco.dev/internal/fakemodel"
)

// runOneShot runs myco with args on home and returns its stdout, stderr and exit status.
func runOneShot(t *testing.T, home string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("myco %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), status
}

// events decodes --json's stdout, one object a line, failing t on a line that is not one.
func events(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("a line of --json is not JSON: %q", sc.Text())
		}
		out = append(out, ev)
	}
	return out
}

// TestOneShotUnixTool (issue 29): myco -p as a tool a script branches on. --output-format
// json prints one result object (status, answer, session id, usage, duration, exit status);
// --json's events keep "&&" as written, tool_finished carries a bash command's exit code
// and done the turn's duration; --resume last continues the session used last; a config
// error is exit status 2, and under --json the last event on stdout, code config_invalid.
func TestOneShotUnixTool(t *testing.T) {
	fake := fakemodel.New(t,
		fakemodel.Turn{Text: "Checking.", ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "bash", Args: `{"command":"true && exit 3"}`}}},
		fakemodel.Turn{Text: "It exits <3> & stops.", Usage: fakemodel.Usage{Input: 1200, Output: 30}},
		fakemodel.Turn{Text: "Still here.", Usage: fakemodel.Usage{Input: 1300, Output: 5}},
	)
	home := profileHome(t, "anthropic-messages", fake.URL, "")

	stdout, stderr, status := runOneShot(t, home, "-p", "run it", "--json")
	if status != cli.ExitOK {
		t.Fatalf("-p --json = %d, want 0\n%s", status, stderr)
	}
	if !strings.Contains(stdout, `"true && exit 3"`) || strings.Contains(stdout, `\u0026`) || !strings.Contains(stdout, `<3> & stops`) {
		t.Errorf("--json escapes <, > or &:\n%s", stdout)
	}
	var session string
	var sawExit, sawDone bool
	for _, ev := range events(t, stdout) {
		switch ev["type"] {
		case "session":
			session, _ = ev["session"].(string)
		case "tool_finished":
			sawExit = ev["exit_code"] == float64(3)
		case "done":
			d, _ := ev["duration_secs"].(float64)
			sawDone = d > 0 && ev["usage"] != nil
		}
	}
	if !sawExit || !sawDone || session == "" {
		t.Errorf("--json: tool_finished with exit_code 3 %v, done with duration and usage %v, the session %q:\n%s", sawExit, sawDone, session, stdout)
	}

	stdout, stderr, status = runOneShot(t, home, "-p", "and now?", "--resume", "last", "--output-format", "json")
	if status != cli.ExitOK {
		t.Fatalf("--resume last --output-format json = %d, want 0\n%s", status, stderr)
	}
	var r cli.Result
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || strings.Count(strings.TrimSpace(stdout), "\n") != 0 {
		t.Fatalf("stdout is not one result object (%v):\n%s", err, stdout)
	}
	if r.Type != "result" || r.Status != "done" || r.Answer != "Still here." || r.Session != session || r.ExitStatus != 0 ||
		r.Usage == nil || r.Usage.Input != 1300 || r.Duration <= 0 {
		t.Errorf("the result = %+v, want done in session %s with its answer, usage and duration", r, session)
	}
	reqs := fake.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "run it") {
		t.Errorf("--resume last did not continue the session: its request lacks the first prompt")
	}

	// A config error: exit 2, and under --json the last object on stdout.
	bad := filepath.Join(home, "profiles", "default", "config.toml")
	if err := os.WriteFile(bad, []byte("[models.m]\nprotocol = \"anthropic-messages\"\nbase_url = \""+fake.URL+"\"\ncontext_windw = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, format := range [][]string{{"--json"}, {"--output-format", "json"}, nil} {
		stdout, stderr, status = runOneShot(t, home, append([]string{"-p", "hi"}, format...)...)
		if status != cli.ExitUsage || !strings.Contains(stderr, "context_windw") {
			t.Errorf("-p %v on a bad config = %d, stderr %q; want 2 naming the key", format, status, stderr)
		}
		switch {
		case format == nil && stdout != "":
			t.Errorf("-p on a bad config wrote %q on stdout", stdout)
		case format != nil:
			evs := events(t, stdout)
			if len(evs) == 0 || evs[len(evs)-1]["code"] != "config_invalid" {
				t.Errorf("-p %v on a bad config: stdout %q, want its last object with code config_invalid", format, stdout)
			}
		}
	}
	// Nothing to resume.
	empty := profileHome(t, "anthropic-messages", fake.URL, "")
	if _, stderr, status := runOneShot(t, empty, "-p", "hi", "--resume", "last"); status == 0 || !strings.Contains(stderr, "no session to resume") {
		t.Errorf("--resume last with no session = %d, %q", status, stderr)
	}
}
