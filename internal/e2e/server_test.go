package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
)

// The real binary, started the way a user starts it: `myco --addr 127.0.0.1:0` with
// MYCO_HOME set, whose first line on stdout is the URL to open.

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary builds the real myco binary once per test run. It embeds static/htmx as it is
// now, which [prerequisites] checked.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "myco-e2e-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "myco")
		out, err := exec.Command("go", "build", "-o", binPath, "myco.dev/cmd/myco").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build myco/cmd/myco: %w\n%s", err, bytes.TrimSpace(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// fixture is one test's world: a scripted fake model, a MYCO_HOME whose default profile
// uses it, and the real server on it.
type fixture struct {
	t     *testing.T
	model *fakemodel.Server
	home  string
	srv   *server
	gates string // the directory of the gate files of gated tool calls
}

// newFixture starts the fake model with turns and the server on a fresh port.
func newFixture(t *testing.T, turns ...fakemodel.Turn) *fixture {
	t.Helper()
	return newFixtureConfig(t, "", turns...)
}

// newFixtureConfig is newFixture whose config.toml also has extra: more models, say, where
// "{{model_url}}" stands for the fake model's URL. Model m comes first in the catalog and
// is the default.
func newFixtureConfig(t *testing.T, extra string, turns ...fakemodel.Turn) *fixture {
	t.Helper()
	return newFixtureWith(t, func(url string) string {
		return "model = \"m\"\n[models.m]\nprotocol = \"anthropic-messages\"\nbase_url = \"" + url + "\"\ncontext_window = 100000\n" +
			strings.ReplaceAll(extra, "{{model_url}}", url)
	}, turns...)
}

// newFixtureWith is newFixture with the profile's config.toml that config returns for the
// fake model's URL.
func newFixtureWith(t *testing.T, config func(url string) string, turns ...fakemodel.Turn) *fixture {
	t.Helper()
	prerequisites(t) // before the build and the server, which a skip would waste
	f := &fixture{t: t, model: fakemodel.New(t, turns...), home: t.TempDir(), gates: t.TempDir()}
	dir := filepath.Join(f.home, "profiles", "default")
	if err := os.MkdirAll(filepath.Join(dir, "workspace"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := config(f.model.URL)
	if !strings.Contains(cfg, "[approvals]") {
		// The pages of other features are tested in full mode, myco's behaviour before
		// modes (issue 31), as cmd/myco's profileHome does; the approvals' own tests set
		// [approvals].
		cfg += "\n[approvals]\nmode = \"full\"\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	f.srv = startServer(t, f.home, "127.0.0.1:0")
	return f
}

// workspaceFile writes a file into the profile's workspace and returns its viewer URL.
func (f *fixture) workspaceFile(name, content string) string {
	f.t.Helper()
	path := filepath.Join(f.home, "profiles", "default", "workspace", filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		f.t.Fatal(err)
	}
	return f.srv.URL + "workspace/" + name
}

// gate returns a harmless bash command that waits (at most a minute) until open is called,
// then prints "hi": a tool call the test holds open for as long as it needs to look at it.
func (f *fixture) gate(name string) (command string, open func()) {
	path := filepath.Join(f.gates, name)
	command = fmt.Sprintf("for i in $(seq 3000); do [ -e %q ] && break; sleep 0.02; done; echo hi", path)
	return command, func() {
		f.t.Helper()
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			f.t.Fatal(err)
		}
	}
}

// postJSON posts body to path (under the profile's pages' URL) as an API client does, and
// decodes the answer, which must be a success, into out (nil: drops it).
func (f *fixture) postJSON(path, body string, out any) {
	f.t.Helper()
	f.postJSONAs(path, body, "", out)
}

// postJSONAs is postJSON as the person's API client, which sends the approval capability
// key ("": none).
func (f *fixture) postJSONAs(path, body, key string, out ...any) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Myco-Approval", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		f.t.Fatalf("POST %s = %s: %s", path, resp.Status, data)
	}
	if len(out) > 0 && out[0] != nil {
		if err := json.Unmarshal(data, out[0]); err != nil {
			f.t.Fatalf("POST %s: %v in %s", path, err, data)
		}
	}
}

// waitFile waits, for at most stepTimeout, until the file at path holds want.
func (f *fixture) waitFile(path, want string) {
	f.t.Helper()
	var got []byte
	for end := time.Now().Add(stepTimeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if got, _ = os.ReadFile(path); string(got) == want {
			return
		}
	}
	f.t.Fatalf("%s holds %q, want %q", path, got, want)
}

// bash is a scripted bash tool call.
func bash(id, command string) fakemodel.ToolCall {
	return fakemodel.ToolCall{ID: id, Name: "bash", Args: fmt.Sprintf(`{"command":%q}`, command)}
}

// server is a running myco server.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	URL    string // the profile's pages: http://127.0.0.1:PORT/profiles/default/
	Addr   string // 127.0.0.1:PORT
	stderr *lockedBuffer
	exited chan struct{}
}

// startServer runs the binary on addr with MYCO_HOME home and waits for its URL.
func startServer(t *testing.T, home, addr string) *server {
	t.Helper()
	cmd := exec.Command(binary(t), "--addr", addr)
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	cmd.Dir = t.TempDir() // relative @paths and .env resolve here, not in the repository
	line := make(chan struct{})
	stdout := &lockedBuffer{line: line}
	s := &server{t: t, cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = stdout, s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.exited
		if t.Failed() {
			t.Logf("server %s stderr:\n%s", s.Addr, s.stderr)
		}
	})
	select {
	case <-line:
	case <-s.exited:
		t.Fatalf("myco --addr %s exited before printing its URL: %v\n%s", addr, cmd.ProcessState, s.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("myco --addr %s printed no URL within 30 s; stderr:\n%s", addr, s.stderr)
	}
	s.URL = strings.TrimSpace(strings.SplitN(stdout.String(), "\n", 2)[0])
	u, err := url.Parse(s.URL)
	if err != nil || u.Scheme != "http" || !strings.HasSuffix(u.Path, "/profiles/default/") {
		t.Fatalf("first line = %q, want http://127.0.0.1:PORT/profiles/default/", s.URL)
	}
	if u.RawQuery != "" {
		t.Fatalf("the server asks for a token (%q): these tests need the socket owner check (/proc/net/tcp)", s.URL)
	}
	s.Addr = u.Host
	return s
}

// origin is the server's scheme://host:port.
func (s *server) origin() string { return "http://" + s.Addr }

// stop sends SIGTERM and waits (boundedly) for the server to exit.
func (s *server) stop() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		s.t.Fatalf("the server did not exit within 15 s of SIGTERM; stderr:\n%s", s.stderr)
	}
}

// lockedBuffer is a bytes.Buffer safe for the writer goroutine of exec and the test; line,
// when set, is closed at the first newline written.
type lockedBuffer struct {
	mu   sync.Mutex // guards the fields below
	b    bytes.Buffer
	line chan struct{}
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	if l.line != nil && bytes.IndexByte(l.b.Bytes(), '\n') >= 0 {
		close(l.line)
		l.line = nil
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newSession creates a session the way a script would (a form post without an Origin) and
// returns its page's URL.
func (f *fixture) newSession() string {
	f.t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(f.srv.URL+"s", url.Values{})
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		f.t.Fatalf("POST %ss = %s, want 303", f.srv.URL, resp.Status)
	}
	return f.srv.origin() + resp.Header.Get("Location")
}
