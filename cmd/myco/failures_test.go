package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"myco.dev/cli"
	"myco.dev/internal/fakemodel"
)

// secretKey is the credential of the tests' gateways: it must never show anywhere.
const secretKey = "sk-test-secret-27"

// failureKinds are the failures of a model request, each on a gateway of its own: what
// the gateway does, and how myco tells it (the code, and the words of its message).
var failureKinds = []struct {
	kind  string // the gateway's and the model's name
	turns []fakemodel.Turn
	auth  string // the gateway's auth table
	code  string
	words []string
}{
	{"auth", []fakemodel.Turn{{Status: 401, ErrorBody: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`}},
		`{ source = "env", var_name = "TEST27_KEY" }`, "auth_failed",
		[]string{"The gateway auth refused the credential (401 Unauthorized)", "Check `auth` of gateway auth in config.toml", "environment variable TEST27_KEY"}},
	{"forbidden", []fakemodel.Turn{{Status: 403, ErrorBody: `{"type":"error","error":{"type":"permission_error","message":"not allowed"}}`}},
		`{ source = "env", var_name = "TEST27_KEY" }`, "auth_failed",
		[]string{"refused the credential (403 Forbidden)", "`auth` of gateway forbidden"}},
	{"nokey", nil, `{ source = "env", var_name = "TEST27_UNSET_KEY" }`, "credential_missing",
		[]string{"The credential for the gateway nokey could not be read: environment variable TEST27_UNSET_KEY is not set", "Set TEST27_UNSET_KEY"}},
	{"nofile", nil, `{ source = "file", path = "/nonexistent/myco-key" }`, "credential_missing",
		[]string{"could not be read: file /nonexistent/myco-key: no such file or directory", "Put the key in /nonexistent/myco-key"}},
	{"notfound", []fakemodel.Turn{{Status: 404, ErrorBody: `{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}`}},
		`{ source = "env", var_name = "TEST27_KEY" }`, "not_found",
		[]string{"The gateway notfound answered 404 Not Found", `"claude-nope"`, "`base_url` of gateway notfound"}},
	{"limited", []fakemodel.Turn{{Status: 429, ErrorType: "rate_limit_error", ErrorMessage: "slow down"}, {Status: 429, ErrorType: "rate_limit_error", ErrorMessage: "slow down"}},
		`{ source = "env", var_name = "TEST27_KEY" }`, "rate_limited",
		[]string{"429 Too Many Requests", "rate limited, also after 2 attempts", "Wait a minute"}},
	{"busy", []fakemodel.Turn{{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded"}, {Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded"}},
		`{ source = "env", var_name = "TEST27_KEY" }`, "overloaded",
		[]string{"The gateway busy is overloaded (529 Overloaded), also after 2 attempts", "Try again in a few minutes"}},
	{"broken", []fakemodel.Turn{{Text: "Half an answer", Drop: true}},
		`{ source = "env", var_name = "TEST27_KEY" }`, "stream_broken",
		[]string{"The model's answer broke off: the stream from the gateway broken ended before the answer was complete"}},
	{"closed", nil, `{ source = "env", var_name = "TEST27_KEY" }`, "unreachable",
		[]string{"The gateway closed could not be reached at http://127.0.0.1:", "(connection refused), also after 2 attempts", "`base_url` of gateway closed"}},
}

// TestFailureKinds (issue 27, finding 5): through the real binary, each kind of failure of
// a model request is told by its kind: myco -p's stderr says what happened and what to
// do in plain words naming the gateway (and where its credential comes from, never the
// credential), with the provider's words on a detail line; -p --json's error event and
// the API's last_error carry the kind's code, the same words and the detail.
func TestFailureKinds(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "profiles", "default")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "model = \"auth\"\n"
	for _, k := range failureKinds {
		var turns []fakemodel.Turn
		for range 3 { // -p, -p --json, -p --output-format json
			turns = append(turns, k.turns...)
		}
		url := fakemodel.New(t, turns...).URL
		if k.kind == "closed" {
			url = closedPort(t)
		}
		cfg += fmt.Sprintf("[gateways.%s]\nprotocol = \"anthropic-messages\"\nbase_url = %q\nauth = %s\nretry = { max_attempts = 2, initial_backoff_ms = 1, max_backoff_ms = 5 }\n"+
			"[models.%[1]s]\ngateway = %[1]q\napi_id = \"claude-nope\"\ncontext_window = 100000\n", k.kind, url, k.auth)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, k := range failureKinds {
		t.Run(k.kind+"/-p", func(t *testing.T) {
			stdout, stderr := runFailing(t, home, cli.ExitFor(k.code), "-p", "hello", "--model", k.kind)
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			words, detail := lines[len(lines)-1], ""
			if d, ok := strings.CutPrefix(words, "  detail: "); ok && len(lines) > 1 {
				words, detail = lines[len(lines)-2], d
			}
			for _, w := range k.words {
				if !strings.HasPrefix(words, "myco: ") || !strings.Contains(words, w) {
					t.Errorf("-p's stderr says %q, want a line that says %q", words, w)
				}
			}
			if k.turns != nil && detail == "" {
				t.Errorf("-p's stderr has no detail line:\n%s", stderr)
			}
			if strings.Contains(stderr, secretKey) {
				t.Errorf("-p's stderr shows the credential:\n%s", stderr)
			}
		})
		t.Run(k.kind+"/--json", func(t *testing.T) {
			stdout, stderr := runFailing(t, home, cli.ExitFor(k.code), "-p", "hello", "--model", k.kind, "--json")
			var last map[string]any
			sc := bufio.NewScanner(strings.NewReader(stdout))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var ev map[string]any
				if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
					t.Fatalf("a line of --json is not JSON: %q", sc.Text())
				}
				if ev["type"] == "session" {
					ids[k.kind] = ev["session"].(string)
				}
				last = ev
			}
			if last["type"] != "error" || last["code"] != k.code || !strings.Contains(fmt.Sprint(last["error"]), k.words[0]) {
				t.Errorf("the last event = %v, want an error with code %s saying %q", last, k.code, k.words[0])
			}
			if k.turns != nil && last["detail"] == nil {
				t.Errorf("the error event has no detail: %v", last)
			}
			if strings.Contains(stdout+stderr, secretKey) {
				t.Error("-p --json shows the credential")
			}
		})
	}
	for _, k := range failureKinds {
		t.Run(k.kind+"/--output-format json", func(t *testing.T) {
			stdout, _ := runFailing(t, home, cli.ExitFor(k.code), "-p", "hello", "--model", k.kind, "--output-format", "json")
			var r cli.Result
			if err := json.Unmarshal([]byte(stdout), &r); err != nil || strings.Count(strings.TrimSpace(stdout), "\n") != 0 {
				t.Fatalf("stdout is not one result object (%v):\n%s", err, stdout)
			}
			if r.Type != "result" || r.Status != "failed" || r.Code != k.code || r.ExitStatus != cli.ExitFor(k.code) || !strings.Contains(r.Error, k.words[0]) {
				t.Errorf("the result = %+v, want failed with code %s and exit status %d", r, k.code, cli.ExitFor(k.code))
			}
		})
	}
	_, u, _ := startServerEnv(t, home, []string{"TEST27_KEY=" + secretKey})
	c := apiClient{t, strings.TrimSuffix(u, "/") + "/api"}
	for _, k := range failureKinds {
		t.Run(k.kind+"/api", func(t *testing.T) {
			if ids[k.kind] == "" {
				t.Fatal("no session id: the -p --json run announced none")
			}
			_, snap := c.get("/sessions/" + ids[k.kind])
			le, _ := snap["last_error"].(map[string]any)
			if snap["last_turn"] != "failed" || le["code"] != k.code || !strings.Contains(fmt.Sprint(le["message"]), k.words[0]) {
				t.Errorf("the snapshot: last_turn %v, last_error %v; want failed, %s, saying %q", snap["last_turn"], le, k.code, k.words[0])
			}
			retry := k.code != "auth_failed" && k.code != "credential_missing" && k.code != "not_found"
			if le["retryable"] != retry {
				t.Errorf("last_error.retryable = %v, want %v", le["retryable"], retry)
			}
		})
	}
}

// runFailing runs myco with args on home, with the gateways' credential in its
// environment, and wants it to fail with status want; it returns its stdout and stderr.
func runFailing(t *testing.T, home string, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=", "TEST27_KEY="+secretKey)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != want {
		t.Fatalf("myco %s: %v, want exit status %d\nstderr:\n%s", strings.Join(args, " "), err, want, errOut.String())
	}
	return out.String(), errOut.String()
}

// closedPort returns the URL of a 127.0.0.1 port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}
