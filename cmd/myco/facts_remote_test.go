package main

// End-to-end tests, through the real binary, of what the model is told about its tools:
// the runtime facts' handles on a remote host reached over a real sshd, and the profile's
// variables in local tool processes.

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
	"myco.dev/internal/sshdtest"
	"myco.dev/internal/syncbuf"
)

// chatProc is the real binary's terminal chat, fed line by line.
type chatProc struct {
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr *syncbuf.Buffer
	exited         chan error
}

// startChat runs myco --mode cli with env added to this process's environment.
func startChat(t *testing.T, env ...string) *chatProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	c := &chatProc{stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, exited: make(chan error, 1)}
	c.cmd = exec.CommandContext(ctx, binary(t), "--mode", "cli")
	c.cmd.Dir = t.TempDir()
	c.cmd.Env = append(append(os.Environ(), "MYCO_PROFILE=", "MYCO_CONFIG="), env...)
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	c.cmd.WaitDelay = 10 * time.Second
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(func() {
		c.stdin.Close()
		select {
		case <-c.exited:
		case <-time.After(30 * time.Second):
			c.cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

// say sends one line and waits until the fake model has served n requests in all.
func (c *chatProc) say(t *testing.T, fake *fakemodel.Server, line string, n int) {
	t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		t.Fatalf("write %q to the chat: %v (stderr: %s)", line, err, c.stderr)
	}
	deadline := time.Now().Add(time.Minute)
	for fake.Served() < n {
		select {
		case err := <-c.exited:
			c.exited <- err
			t.Fatalf("the chat exited (%v) after %d requests, want %d; stderr:\n%s", err, fake.Served(), n, c.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %q: %d requests served, want %d; stderr:\n%s", line, fake.Served(), n, c.stderr)
		}
	}
}

// quit ends the chat's input and waits for it to exit.
func (c *chatProc) quit(t *testing.T) {
	t.Helper()
	c.stdin.Close()
	select {
	case err := <-c.exited:
		c.exited <- err
		if err != nil {
			t.Errorf("the chat: %v; stderr:\n%s", err, c.stderr)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the chat did not exit at the end of its input; stderr:\n%s", c.stderr)
	}
}

// lastUserText returns the text of the last user message of an anthropic-messages request
// (the runtime facts ride on it as a text block), and the text of its tool results.
func lastUserText(t *testing.T, r fakemodel.Request) string {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type    string          `json:"type"`
				Text    string          `json:"text"`
				Content json.RawMessage `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &req); err != nil {
		t.Fatalf("request body: %v", err)
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == "user" {
			var b strings.Builder
			for _, c := range m.Content {
				b.WriteString(c.Text)
				b.Write(c.Content)
				b.WriteByte('\n')
			}
			return b.String()
		}
	}
	t.Fatalf("no user message in %s", r.Body)
	return ""
}

// TestFactsRemoteHandles: the chat, on a profile whose ~/.ssh/config names a host reached
// through a real sshd, opens a bash session there; the runtime facts of the next turn list
// it, and after the host daemon holding it is killed, the facts of the turn after that list
// it as last known, without connecting the host again.
func TestFactsRemoteHandles(t *testing.T) {
	srv := sshdtest.Start(t)
	// The remote side runs this binary as the myco on its PATH.
	if err := os.MkdirAll(filepath.Join(srv.Home, ".local", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binary(t), filepath.Join(srv.Home, ".local", "bin", "myco")); err != nil {
		t.Fatal(err)
	}
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"action":"start","command":"exec sleep 300","host":"devbox"}`}}},
		fakemodel.Turn{Text: "started"},
		fakemodel.Turn{Text: "seen"},
		fakemodel.Turn{Text: "gone"},
	)
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	chat := startChat(t, "HOME="+srv.Home, "MYCO_HOME="+home)

	chat.say(t, fake, "start a session on devbox", 2)
	if res := lastUserText(t, fake.Requests()[1]); !strings.Contains(res, "session_id: b1") {
		t.Fatalf("the remote start = %q, want session b1", res)
	}
	chat.say(t, fake, "what do you hold?", 3)
	const handle = "devbox bash session b1 (running): exec sleep 300"
	facts := lastUserText(t, fake.Requests()[2])
	if !strings.Contains(facts, "[myco: runtime]") || !strings.Contains(facts, "tool handles:\n- "+handle+"\n") {
		t.Errorf("the facts of the turn after the start = %q, want %q listed as live", facts, handle)
	}

	// The host daemon that holds the session dies; its connection drops with it.
	pids := sshdtest.DaemonPIDs(srv.DaemonDir())
	if len(pids) != 1 {
		t.Fatalf("host daemons on devbox = %v, want one", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !sshdtest.Gone(pids[0]); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the host daemon %d outlived SIGKILL", pids[0])
		}
	}
	chat.say(t, fake, "and now?", 4)
	facts = lastUserText(t, fake.Requests()[3])
	if !strings.Contains(facts, "- "+handle+" [last known: ") {
		t.Errorf("the facts after the drop = %q, want %q marked last known", facts, handle)
	}
	for _, pid := range sshdtest.DaemonPIDs(srv.DaemonDir()) {
		if !sshdtest.Gone(pid) {
			t.Errorf("taking the facts started a host daemon again: pid %d", pid)
		}
	}
	chat.quit(t)
	// The chat tells the host's states in its own lines; the log's go to the profile's
	// myco.log, not between them.
	if s := chat.stderr.String(); !strings.Contains(s, "host devbox: attached") || strings.Contains(s, "msg=") || strings.Contains(s, "INFO") || strings.Contains(s, "WARN") {
		t.Errorf("the chat's stderr =\n%s\nwant its own host lines and no log line", s)
	}
	if b, err := os.ReadFile(filepath.Join(home, "profiles", "default", "myco.log")); err != nil || !regexp.MustCompile(`msg="host dropped" .*host=devbox`).Match(b) {
		t.Errorf("myco.log = %q, %v; want the drop of devbox", b, err)
	}
}

// TestToolEnvAcrossDirectories: started with a relative MYCO_HOME and --profile, myco
// gives its local tool processes the profile's name and the absolute MYCO_HOME, which
// still name the profile's config after a cd, in an exec call and in a bash session.
func TestToolEnvAcrossDirectories(t *testing.T) {
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"cd / && printf 'exec P=%s H=%s\\n' \"$MYCO_PROFILE\" \"$MYCO_HOME\" && cd /tmp && test -f \"$MYCO_HOME/profiles/$MYCO_PROFILE/config.toml\" && echo exec-config-found"}`}}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"action":"start","command":"cd / && while :; do echo \"session P=$MYCO_PROFILE H=$MYCO_HOME D=$PWD\"; test -f \"$MYCO_HOME/profiles/$MYCO_PROFILE/config.toml\" && echo session-config-found; sleep 1; done"}`}}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"action":"read","session_id":"b1","timeout_secs":30}`}}},
		fakemodel.Turn{Text: "done"},
	)
	dir := t.TempDir()
	home := filepath.Join(dir, "mh")
	// Full mode: the commands read the profile's config, which the sandbox hides.
	cfg := "[models.m]\nprotocol = \"anthropic-messages\"\nbase_url = \"" + fake.URL + "\"\ncontext_window = 100000\n[approvals]\nmode = \"full\"\n"
	sshdtest.WriteFile(t, filepath.Join(home, "profiles", "work", "config.toml"), cfg)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), "--profile", "work", "-p", "go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MYCO_HOME=mh", "MYCO_PROFILE=", "MYCO_CONFIG=")
	cmd.WaitDelay = 10 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("myco -p: %v\n%s", err, out)
	}
	reqs := fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	want := "P=work H=" + home
	if got := lastUserText(t, reqs[1]); !strings.Contains(got, "exec "+want+`\n`) || !strings.Contains(got, "exec-config-found") {
		t.Errorf("the exec call printed %q, want %q and the config found after the cd", got, want)
	}
	if got := lastUserText(t, reqs[2]) + lastUserText(t, reqs[3]); !strings.Contains(got, "session "+want+" D=/") || !strings.Contains(got, "session-config-found") {
		t.Errorf("the session printed %q, want %q and the config found from /", got, want)
	}
}
