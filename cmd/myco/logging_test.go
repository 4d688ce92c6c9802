package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"myco.dev/internal/fakemodel"
)

// failTurn runs the server with args and env on a model that refuses the key (401), has
// one turn fail through the API, stops the server and returns the session id and the
// server's stderr.
func failTurn(t *testing.T, env []string, args ...string) (string, string) {
	t.Helper()
	srv := fakemodel.New(t, fakemodel.Turn{Status: 401, ErrorType: "authentication_error", ErrorMessage: "invalid x-api-key"})
	home := profileHome(t, "anthropic-messages", srv.URL, "")
	// A second profile, whose worker starts too: its lines go to the same stderr.
	other := filepath.Join(home, "profiles", "other")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "config.toml"), []byte("[models.m]\nprotocol = \"anthropic-messages\"\nbase_url = \""+srv.URL+"\"\ncontext_window = 1000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t), append([]string{"--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG="), env...)
	out, stderr := startPiped(t, cmd)
	u, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no URL on stdout: %v; stderr:\n%s", err, stderr)
	}
	u = strings.TrimSpace(u)
	if resp, err := http.Get(strings.Replace(u, "/profiles/default/", "/profiles/other/api/version", 1)); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the second profile's worker did not answer: %v %v", resp, err)
	}
	id, snap := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}.run("r1", "hello")
	if snap["last_turn"] == "completed" {
		t.Fatalf("the turn completed, want it failed: %v", snap)
	}
	// Stopped, the server has written all it will: its workers' lines came before.
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM = %v; stderr:\n%s", err, stderr)
	}
	return id, stderr.String()
}

// TestServerLogsFailedTurn: a turn that fails in the server leaves exactly one line on
// the server's stderr, naming the session and the reason.
func TestServerLogsFailedTurn(t *testing.T) {
	id, stderr := failTurn(t, nil)
	var lines []string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, id) {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "session_id="+id) || !strings.Contains(lines[0], "401") ||
		!strings.Contains(lines[0], "invalid x-api-key") || !strings.Contains(lines[0], "level=WARN") {
		t.Errorf("the lines naming session %s = %q, want one warning with the 401 and its message; stderr:\n%s", id, lines, stderr)
	}
}

// TestLogFormatJSON: with MYCO_LOG_FORMAT=json (and --log-level), the server's stderr,
// with two profiles' workers and a failed turn, parses line by line as JSON objects, as
// jq -c . reads it: each worker's line names its profile in a field, never a prefix. The
// failed turn is one of them.
func TestLogFormatJSON(t *testing.T) {
	id, stderr := failTurn(t, []string{"MYCO_LOG_FORMAT=json"}, "--log-level", "debug")
	found := 0
	profiles := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("a log line is not JSON: %q (%v)", line, err)
			continue
		}
		if rec["time"] == nil || rec["level"] == nil || rec["msg"] == nil {
			t.Errorf("a log line lacks time, level or msg: %q", line)
		}
		if p, ok := rec["profile"].(string); ok {
			profiles[p] = true
		}
		if rec["session_id"] == id {
			found++
			if e, _ := rec["err"].(string); !strings.Contains(e, "401") {
				t.Errorf("the failed turn's line = %q, want its reason", line)
			}
		}
	}
	if found != 1 {
		t.Errorf("%d lines name session %s, want 1; stderr:\n%s", found, id, stderr)
	}
	if !profiles["default"] || !profiles["other"] {
		t.Errorf("the lines name the profiles %v, want both workers'", profiles)
	}
	// At debug level, each request leaves an access line: its method, path and status.
	if !strings.Contains(stderr, `"msg":"request","profile":"default","method":"POST","path":"/profiles/default/api/sessions/`+id+`/actions","status":200`) {
		t.Errorf("no access line for the submit; stderr:\n%s", stderr)
	}
}

// TestTerminalLogsToProfile: myco -p keeps stderr for its own lines; its log goes to the
// profile's myco.log, where the failed turn leaves one line.
func TestTerminalLogsToProfile(t *testing.T) {
	srv := fakemodel.New(t, fakemodel.Turn{Status: 401, ErrorType: "authentication_error", ErrorMessage: "invalid x-api-key"})
	home := profileHome(t, "anthropic-messages", srv.URL, "")
	cmd := exec.Command(binary(t), "-p", "hello")
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=", "MYCO_LOG_LEVEL=", "MYCO_LOG_FORMAT=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("myco -p on a 401 succeeded; stderr:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "level=") || strings.Count(stderr.String(), "invalid x-api-key") != 1 {
		t.Errorf("stderr = %q, want the one error line of myco -p and no log line", stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(home, "profiles", "default", "myco.log"))
	if err != nil {
		t.Fatal(err)
	}
	id := sessionOf(t, stderr.String())
	if n := strings.Count(string(b), "session_id="+id); n != 1 || !strings.Contains(string(b), "pid=") {
		t.Errorf("myco.log =\n%s\nwant one line naming session %s, with the pid", b, id)
	}
}

// TestLogFlagsRefused: a log level or format myco does not know is a usage error, from a
// flag or from the environment.
func TestLogFlagsRefused(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--log-level", "loud", "-p", "hi"}, "", `--log-level "loud": want debug, info, warn or error`},
		{[]string{"--log-format", "xml"}, "", `--log-format "xml": want text or json`},
		{[]string{"-p", "hi"}, "MYCO_LOG_FORMAT=yaml", `MYCO_LOG_FORMAT "yaml": want text or json`},
	} {
		cmd := exec.Command(binary(t), tt.args...)
		cmd.Env = append(os.Environ(), "MYCO_HOME="+t.TempDir(), tt.env)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage || !strings.Contains(string(out), tt.want) {
			t.Errorf("myco %q with %q = %v, %q; want exit status 2 and %q", tt.args, tt.env, err, out, tt.want)
		}
	}
}
