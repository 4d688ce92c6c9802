package main

// End-to-end tests, through the real binary, of myco's defences against hostile input:
// a model or gateway that sends terminal escapes, redirects, malformed or endless streams
// or nothing at all; a base_url with credentials; a host controller that breaks the
// protocol; a MYCO_HOME another user could write. The testscript side of this suite is in
// testdata/script/sec_*.txtar.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/cli"
	"myco.dev/hosts/proto"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/needs"
)

// mycoRun is the outcome of one run of the binary.
type mycoRun struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// runMyco runs the built binary with MYCO_HOME=home in a fresh working directory (no .env,
// no guidance files), with stdin (nil for none), and fails the test if it runs longer than
// limit.
func runMyco(t *testing.T, home string, stdin io.Reader, limit time.Duration, args ...string) mycoRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := mycoRun{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("myco %q still ran after %s; stderr:\n%s", args, limit, r.stderr)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run myco %q: %v", args, err)
	}
	return r
}

// sessionFiles returns the contents of every file of the default profile's session
// directory, concatenated.
func sessionFiles(t *testing.T, home string) string {
	t.Helper()
	dir := filepath.Join(home, "profiles", "default", "session")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// needRoot skips a test that must run as root (to chown), or fails it under CI, which runs
// as root.
func needRoot(t *testing.T) {
	t.Helper()
	needs.Root(t, "chowning a directory to another user")
}

// hostile is the escape sequences of the terminal tests: OSC 52 (write the clipboard),
// OSC 0 (set the window title), CSI 2J (clear the screen).
const hostile = "\x1b]52;c;ZXZpbA==\x07 \x1b]0;pwned\x07 \x1b[2J"

// mycoSequences are the control sequences myco itself writes to a terminal.
var mycoSequences = regexp.MustCompile(`\x1b\[(?:[0-9;]*[mABCDK]|\?2004[hl])`)

// TestSecTerminalEscapesOnPty runs myco -p and the chat with stdout and stderr on a
// terminal (script(1) gives them a pseudo-terminal): the model's answer, a tool's error, a
// tool's output and a retry notice carrying escape sequences reach the terminal only as
// visible escapes.
// (With stdout not a terminal the answer is written as it is, by design; sec_escapes.txtar
// covers stderr and --json in that case.)
func TestSecTerminalEscapesOnPty(t *testing.T) {
	scriptBin := needs.Program(t, "script", "util-linux: apt-get install -y util-linux")
	bin := binary(t)
	turns := []fakemodel.Turn{
		{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "busy " + hostile},
		{ToolCalls: []fakemodel.ToolCall{{Name: "str_replace_based_edit_tool",
			Args: `{"command":"view","path":"/nonexistent/f\u001b]0;pwned\u0007"}`},
			{Name: "bash", Args: `{"command":"printf 'out \\033]0;pwned\\007 \\033[2J end\\n'"}`}}},
		{Text: "answer " + hostile + " done"},
	}
	for _, tt := range []struct {
		name  string
		args  string
		stdin string
	}{
		{"one-shot", "-p hello", ""},
		{"chat", "--mode cli", "hello\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakemodel.New(t, turns...)
			home := profileHome(t, "anthropic-messages", srv.URL, "[models.m.retry]\ninitial_backoff_ms = 1\n")
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, scriptBin, "-qec", "'"+bin+"' "+tt.args, "/dev/null")
			cmd.Dir = t.TempDir()
			// A capable terminal with colour: the chat's line editor and colours are on.
			cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=", "TERM=xterm", "NO_COLOR=")
			cmd.Stdin = strings.NewReader(tt.stdin)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("script -c 'myco %s': %v; terminal output:\n%q", tt.args, err, out)
			}
			// myco's own sequences: SGR colours, bracketed paste on and off, the line
			// editor's cursor moves and line erase. Nothing else may reach the terminal.
			if i := bytes.IndexAny(mycoSequences.ReplaceAll(out, nil), "\x1b\x07"); i >= 0 {
				t.Errorf("the terminal got a raw control byte %q at %d:\n%q", out[i], i, out)
			}
			for _, want := range []string{
				`answer \x1b]52;c;ZXZpbA==\x07 \x1b]0;pwned\x07 \x1b[2J done`,
				`returned 529 (overloaded_error): busy \x1b]52;c;ZXZpbA==\x07`,
				`← str_replace_based_edit_tool error: `,
				`/nonexistent/f\x1b]0;pwned\x07`,
				// A tool's output shows on a terminal, myco -p's too.
				"  │ out \\x1b]0;pwned\\x07 \\x1b[2J end",
			} {
				if !bytes.Contains(out, []byte(want)) {
					t.Errorf("the terminal output does not show %q:\n%q", want, out)
				}
			}
		})
	}
}

// TestSecBaseURLSecrets gives base_url a password and a query (a signed parameter). When
// the request fails, the message on stderr, in --json and in the saved session names the
// URL without them; when it works, the query reaches the gateway on the right path.
func TestSecBaseURLSecrets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nowhere := ln.Addr().String()
	ln.Close() // nothing listens there now
	const retry = "[models.m.retry]\nmax_attempts = 2\ninitial_backoff_ms = 1\n"
	for _, tt := range []struct {
		name  string
		turns []fakemodel.Turn // nil: nothing listens
		path  string
		want  string // what the failure says
		exit  int    // the exit status of its class (docs/cli.md)
	}{
		{"nothing listens", nil, "/v1", "http://" + nowhere + "/v1/v1/messages", cli.ExitUnavailable},
		{"status 404 (the fake serves no /v1/v1/messages)", []fakemodel.Turn{}, "/v1", "returned 404", cli.ExitRejected},
		{"status 500", []fakemodel.Turn{{Status: 500}, {Status: 500}}, "", "returned 500", cli.ExitUnavailable},
	} {
		for _, asJSON := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s json=%v", tt.name, asJSON), func(t *testing.T) {
				hostport := nowhere
				if tt.turns != nil {
					hostport = strings.TrimPrefix(fakemodel.New(t, tt.turns...).URL, "http://")
				}
				base := "http://user:PASSW0RD@" + hostport + tt.path + "?x=secretq"
				home := profileHome(t, "anthropic-messages", base, retry)
				args := []string{"-p", "hi"}
				if asJSON {
					args = append(args, "--json")
				}
				r := runMyco(t, home, nil, time.Minute, args...)
				if r.code != tt.exit {
					t.Fatalf("exit status %d, want %d; stderr:\n%s", r.code, tt.exit, r.stderr)
				}
				saved := sessionFiles(t, home)
				failure := r.stderr
				if asJSON {
					failure = r.stdout
				}
				for what, s := range map[string]string{"the failure": failure, "the session file": saved} {
					if !strings.Contains(s, tt.want) {
						t.Errorf("%s does not say %q:\n%s", what, tt.want, s)
					}
				}
				for what, s := range map[string]string{"stderr": r.stderr, "stdout": r.stdout, "the session file": saved} {
					for _, secret := range []string{"PASSW0RD", "user@", "secretq"} {
						if strings.Contains(s, secret) {
							t.Errorf("%s shows %q from base_url:\n%s", what, secret, s)
						}
					}
				}
			})
		}
	}

	t.Run("working gateway", func(t *testing.T) {
		srv := fakemodel.New(t, fakemodel.Turn{Text: "ok"})
		base := strings.Replace(srv.URL, "http://", "http://user:PASSW0RD@", 1) + "?x=secretq"
		home := profileHome(t, "anthropic-messages", base, "")
		r := runMyco(t, home, nil, time.Minute, "-p", "hi")
		if r.code != exitOK || r.stdout != "ok\n" {
			t.Fatalf("exit status %d, stdout %q; want 0 and ok; stderr:\n%s", r.code, r.stdout, r.stderr)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 {
			t.Fatalf("the gateway got %d requests, want 1", len(reqs))
		}
		if reqs[0].Path != "/v1/messages" || reqs[0].Query != "x=secretq" {
			t.Errorf("request to path %q query %q, want /v1/messages and x=secretq", reqs[0].Path, reqs[0].Query)
		}
		// The userinfo is for the gateway: it goes as basic auth.
		if got, want := reqs[0].Header.Get("Authorization"), "Basic "+base64.StdEncoding.EncodeToString([]byte("user:PASSW0RD")); got != want {
			t.Errorf("Authorization = %q, want %q", got, want)
		}
		if strings.Contains(r.stderr, "PASSW0RD") || strings.Contains(r.stderr, "secretq") {
			t.Errorf("stderr shows a secret of base_url:\n%s", r.stderr)
		}
	})
}

// TestSecRedirectNotFollowed has the gateway answer 307 to another loopback server: myco
// sends that server nothing (neither the conversation nor the key), does not retry, exits
// 1 and names the Location without its credentials and query.
func TestSecRedirectNotFollowed(t *testing.T) {
	elsewhere := fakemodel.New(t, fakemodel.Turn{Text: "stolen"})
	loc := strings.Replace(elsewhere.URL, "http://", "http://mallory:S3CRET@", 1) + "/v1/messages?token=T0KEN"
	srv := fakemodel.New(t, fakemodel.Turn{Status: 307, Location: loc}, fakemodel.Turn{Text: "never"})
	home := profileHome(t, "anthropic-messages", srv.URL, "auth = \"sk-the-key\"\n[models.m.retry]\ninitial_backoff_ms = 1\n")
	r := runMyco(t, home, nil, time.Minute, "-p", "the conversation")
	if n := len(elsewhere.Requests()); n != 0 {
		t.Fatalf("the redirect's target got %d requests, want none", n)
	}
	if r.code != cli.ExitUnavailable { // the model endpoint could not answer
		t.Fatalf("exit status %d, want %d; stderr:\n%s", r.code, cli.ExitUnavailable, r.stderr)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the gateway got %d requests, want 1: a redirect is not retried", n)
	}
	if want := "redirect to " + elsewhere.URL + "/v1/messages not followed"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
	}
	for _, secret := range []string{"mallory", "S3CRET", "T0KEN", "sk-the-key"} {
		if strings.Contains(r.stderr, secret) || strings.Contains(sessionFiles(t, home), secret) {
			t.Errorf("stderr or the session file shows %q:\n%s", secret, r.stderr)
		}
	}
}

// TestSecSilentGateway has the gateway accept the request and then say nothing: no
// response headers, or a stream that stalls after its first text. myco ends within a
// bounded time with an error naming the config key that raises the timeout.
func TestSecSilentGateway(t *testing.T) {
	for _, tt := range []struct {
		name    string
		turn    fakemodel.Turn
		setting string
	}{
		{"no headers", fakemodel.Turn{Silent: true}, "response_header_timeout_secs"},
		{"stalled stream", fakemodel.Turn{Text: "partial", Stall: true}, "stream_idle_timeout_secs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakemodel.New(t, tt.turn)
			home := profileHome(t, "anthropic-messages", srv.URL,
				"response_header_timeout_secs = 1\nstream_idle_timeout_secs = 1\n[models.m.retry]\nmax_attempts = 1\n")
			r := runMyco(t, home, nil, 30*time.Second, "-p", "hi")
			if r.code != cli.ExitUnavailable { // the model endpoint could not answer
				t.Fatalf("exit status %d, want %d; stderr:\n%s", r.code, cli.ExitUnavailable, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.setting) {
				t.Errorf("stderr does not name %s:\n%s", tt.setting, r.stderr)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("the gateway got %d requests, want 1 (max_attempts = 1)", n)
			}
			t.Logf("myco ended after %s", r.elapsed)
		})
	}
}

// TestSecEndlessStream has the gateway stream text deltas without end: myco stops reading
// at the response cap that max_output_tokens sets, exits 1 naming the cap, and does not
// retry.
func TestSecEndlessStream(t *testing.T) {
	const maxOutput = 16
	head := []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
	}
	delta := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + strings.Repeat("x", 200) + "\"}}\n\n"
	srv := fakemodel.New(t, fakemodel.Turn{Raw: head, Repeat: delta}, fakemodel.Turn{Text: "never"})
	home := profileHome(t, "anthropic-messages", srv.URL, fmt.Sprintf("max_output_tokens = %d\n[models.m.retry]\ninitial_backoff_ms = 1\n", maxOutput))
	r := runMyco(t, home, nil, time.Minute, "-p", "hi")
	if r.code != cli.ExitUnavailable { // the model endpoint could not answer
		t.Fatalf("exit status %d, want %d; stderr:\n%s", r.code, cli.ExitUnavailable, r.stderr)
	}
	if want := fmt.Sprintf("over the cap of %d bytes per response", model.ResponseCap(maxOutput)); !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the gateway got %d requests, want 1: a response over the cap is not retried", n)
	}
}

// TestSecEmptyProfile: --profile "" is a usage error (status 2), not the default profile.
func TestSecEmptyProfile(t *testing.T) {
	srv := fakemodel.New(t, fakemodel.Turn{Text: "ok"})
	home := profileHome(t, "anthropic-messages", srv.URL, "")
	if r := runMyco(t, home, nil, time.Minute, "-p", "hi"); r.code != exitOK {
		t.Fatalf("the control run (no --profile) exited %d; stderr:\n%s", r.code, r.stderr)
	}
	srv.Script(fakemodel.Turn{Text: "ok"})
	r := runMyco(t, home, nil, time.Minute, "--profile", "", "-p", "hi")
	if r.code != exitUsage {
		t.Errorf("myco --profile '' -p hi exited %d, want 2 (a usage error); stderr:\n%s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stderr, "myco: --profile") {
		t.Errorf("stderr does not start with the --profile error:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "session:") || len(srv.Requests()) != 1 {
		t.Errorf("a session was started (%d requests); stderr:\n%s", len(srv.Requests()), r.stderr)
	}
}

// TestSecHostModeBadController speaks to myco --mode host as a controller that breaks the
// protocol: a hello of another protocol version, or a frame over the 2 MiB line cap. The
// host answers with a fatal error frame and exits 1 with the message on stderr, both when
// it serves in-process and through its daemon.
func TestSecHostModeBadController(t *testing.T) {
	frame := func(m proto.Msg) []byte {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	hello := func(v int) []byte { return frame(proto.Msg{Hello: &proto.Hello{Protocol: v, Version: "test"}}) }
	long := append(hello(proto.Version), bytes.Repeat([]byte("x"), proto.MaxRequestLine)...)
	long = append(long, '\n')
	for _, daemon := range []bool{false, true} {
		for _, tt := range []struct {
			name  string
			input []byte
			want  string
		}{
			{"protocol mismatch", hello(proto.Version + 1), "host protocol mismatch"},
			{"line over the cap", long, "frame line too long"},
		} {
			t.Run(fmt.Sprintf("%s daemon=%v", tt.name, daemon), func(t *testing.T) {
				args := []string{"--mode", "host", "--no-daemon"}
				if daemon {
					dir := daemonDir(t)
					args = []string{"--mode", "host", "--host-dir", dir, "--host-idle", "2s"}
				}
				r := runMyco(t, t.TempDir(), bytes.NewReader(tt.input), time.Minute, args...)
				if r.code != exitError {
					t.Fatalf("exit status %d, want 1; stderr:\n%s", r.code, r.stderr)
				}
				if !strings.Contains(r.stderr, "myco: ") || !strings.Contains(r.stderr, tt.want) {
					t.Errorf("stderr does not say %q:\n%s", tt.want, r.stderr)
				}
				if daemon && strings.Contains(r.stderr, "serving in this process") {
					t.Errorf("the host served in-process, not through its daemon:\n%s", r.stderr)
				}
				lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
				var first, last proto.Msg
				if json.Unmarshal([]byte(lines[0]), &first) != nil || first.Hello == nil ||
					json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil || last.Err == nil || !last.Err.Fatal ||
					!strings.Contains(last.Err.Message, tt.want) {
					t.Errorf("stdout is not the host's hello then a fatal error saying %q:\n%s", tt.want, r.stdout)
				}
			})
		}
	}
}

// daemonDir returns a private directory for a host daemon (short: its socket path must fit
// sun_path) and ends the daemon started there when the test ends.
func daemonDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sec-hd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pids, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
		for _, p := range pids {
			if raw, err := os.ReadFile(p); err == nil {
				var pid int
				if _, err := fmt.Sscan(string(raw), &pid); err == nil && pid > 0 {
					syscall.Kill(pid, syscall.SIGTERM)
					waitEnded(t, "the host daemon after SIGTERM", time.Now().Add(15*time.Second), pid)
				}
			}
		}
		os.RemoveAll(dir)
	})
	return dir
}

// TestSecUntrustedHome: a MYCO_HOME, profiles directory or config file another user could
// have written is refused before any model call, naming the path and the command that
// fixes it.
func TestSecUntrustedHome(t *testing.T) {
	for _, tt := range []struct {
		name string
		root bool // needs root to set up
		// spoil changes home so that another user could have written it, and returns the
		// path that is refused.
		spoil func(t *testing.T, home string) string
		fix   string
	}{
		{"home of another user", true, func(t *testing.T, home string) string {
			if err := os.Chown(home, 65534, -1); err != nil {
				t.Fatal(err)
			}
			return home
		}, "sudo chown root "}, // the fix gives it back to this user: root (needRoot)
		{"group-writable home", false, func(t *testing.T, home string) string { return chmod(t, home, 0o770) }, "chmod go-w "},
		{"world-writable home", false, func(t *testing.T, home string) string { return chmod(t, home, 0o777) }, "chmod go-w "},
		{"world-writable profiles directory", false, func(t *testing.T, home string) string {
			return chmod(t, filepath.Join(home, "profiles"), 0o757)
		}, "chmod go-w "},
		{"config of another user", true, func(t *testing.T, home string) string {
			cfg := filepath.Join(home, "profiles", "default", "config.toml")
			if err := os.Chown(cfg, 65534, -1); err != nil {
				t.Fatal(err)
			}
			return cfg
		}, "sudo chown root "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root {
				needRoot(t)
			}
			srv := fakemodel.New(t, fakemodel.Turn{Text: "ok"}, fakemodel.Turn{Text: "ok"})
			home := profileHome(t, "anthropic-messages", srv.URL, "")
			if r := runMyco(t, home, nil, time.Minute, "-p", "hi"); r.code != exitOK {
				t.Fatalf("the control run exited %d; stderr:\n%s", r.code, r.stderr)
			}
			path := tt.spoil(t, home)
			r := runMyco(t, home, nil, time.Minute, "-p", "hi")
			if r.code != exitError {
				t.Fatalf("exit status %d, want 1; stderr:\n%s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "refusing the ") || !strings.Contains(r.stderr, tt.fix+path) {
				t.Errorf("stderr does not refuse %s with the fix %q:\n%s", path, tt.fix+path, r.stderr)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("the model got %d requests, want only the control run's", n)
			}
		})
	}

	t.Run("inline key readable by others", func(t *testing.T) {
		srv := fakemodel.New(t, fakemodel.Turn{Text: "ok"}, fakemodel.Turn{Text: "ok"})
		home := profileHome(t, "anthropic-messages", srv.URL, "auth = \"sk-INLINE-KEY\"\n")
		cfg := filepath.Join(home, "profiles", "default", "config.toml")
		for _, tt := range []struct {
			mode os.FileMode
			warn bool
		}{{0o600, false}, {0o644, true}} {
			chmod(t, cfg, tt.mode)
			r := runMyco(t, home, nil, time.Minute, "-p", "hi")
			if r.code != exitOK {
				t.Fatalf("mode %v: exit status %d, want 0 (a warning does not stop myco); stderr:\n%s", tt.mode, r.code, r.stderr)
			}
			warned := strings.Contains(r.stderr, "myco: warning: "+cfg) &&
				strings.Contains(r.stderr, "an inline credential in a file that group or others may read") &&
				strings.Contains(r.stderr, "chmod 600 "+cfg)
			if warned != tt.warn {
				t.Errorf("mode %v: warned = %v, want %v; stderr:\n%s", tt.mode, warned, tt.warn, r.stderr)
			}
			if strings.Contains(r.stderr, "sk-INLINE-KEY") {
				t.Errorf("mode %v: stderr shows the key:\n%s", tt.mode, r.stderr)
			}
		}
	})
}

func chmod(t *testing.T, path string, mode os.FileMode) string {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}
