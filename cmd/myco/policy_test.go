package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"myco.dev/cli"
	"myco.dev/hosts/sandbox"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/needs"
)

// needSandbox skips a test where the kernel cannot fence commands.
func needSandbox(t *testing.T) {
	t.Helper()
	f, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Support().Check(sandbox.Spec{Protected: []string{"/"}}); err != nil {
		needs.Missing(t, "no sandbox here: %v", err)
	}
}

// runIn runs myco with args in dir on home and returns its stdout, stderr and status.
func runIn(t *testing.T, dir, home string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), status
}

// toolResults returns the tool results of the fake's i-th request by call id.
func toolResults(t *testing.T, fake *fakemodel.Server, i int) map[string]string {
	t.Helper()
	reqs := fake.Requests()
	if i >= len(reqs) {
		t.Fatalf("request %d of %d", i, len(reqs))
	}
	var body struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(reqs[i].Body, &body)
	out := map[string]string{}
	for _, m := range body.Messages {
		var parts []struct {
			Type    string          `json:"type"`
			ID      string          `json:"tool_use_id"`
			Content json.RawMessage `json:"content"`
		}
		json.Unmarshal(m.Content, &parts)
		for _, p := range parts {
			if p.Type == "tool_result" {
				out[p.ID] = string(p.Content)
			}
		}
	}
	return out
}

func bashArgs(command string, outside bool) string {
	in := map[string]any{"command": command}
	if outside {
		in["outside_sandbox"], in["justification"] = true, "the test needs it"
	}
	b, _ := json.Marshal(in)
	return string(b)
}

// TestSandboxWorkspace (issue 31): myco -p in workspace mode, the default where the
// kernel has Landlock, through the real binary: a write in the session's directory goes
// ahead; a write outside, a read of myco's home, writes to .git/hooks and .git/config and a
// network connection are refused, and the model is told how to ask; a call outside the
// sandbox would ask, so -p denies it, says so in --json and exits 6. With --allow for it,
// the same call runs outside.
func TestSandboxWorkspace(t *testing.T) {
	needSandbox(t)
	dir, outside := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core]\n"), 0o644)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:")
	calls := []fakemodel.ToolCall{
		{ID: "in", Name: "bash", Args: bashArgs("echo ok > inside.txt && cat inside.txt && touch $TMPDIR/t && echo tmp-ok", false)},
		{ID: "out", Name: "bash", Args: bashArgs("echo x > "+outside+"/x", false)},
		{ID: "home", Name: "bash", Args: bashArgs(`cat "$MYCO_HOME/profiles/default/config.toml"`, false)},
		{ID: "hook", Name: "bash", Args: bashArgs("echo 'rm -rf ~' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit", false)},
		{ID: "config", Name: "bash", Args: bashArgs("printf '[core]\\n\\thooksPath = /tmp\\n' >> .git/config", false)},
		{ID: "net", Name: "bash", Args: bashArgs("exec 3<>/dev/tcp/127.0.0.1/"+port+" && echo connected", false)},
		{ID: "esc", Name: "bash", Args: bashArgs("touch "+outside+"/escaped", true)},
	}
	fake := fakemodel.New(t, fakemodel.Turn{ToolCalls: calls}, fakemodel.Turn{Text: "Done."},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "esc2", Name: "bash", Args: bashArgs("touch "+outside+"/escaped", true)}}}, fakemodel.Turn{Text: "Done again."})
	home := profileHome(t, "anthropic-messages", fake.URL, "\n[approvals]\n") // the default mode

	stdout, stderr, status := runIn(t, dir, home, "-p", "try everything", "--json")
	if status != cli.ExitDenied {
		t.Errorf("exit status %d, want %d (a call was denied)\n%s", status, cli.ExitDenied, stderr)
	}
	res := toolResults(t, fake, 1)
	if r := res["in"]; !strings.Contains(r, "ok") || !strings.Contains(r, "tmp-ok") || !strings.Contains(r, "exit status 0") {
		t.Errorf("the write inside: %s", r)
	}
	for _, id := range []string{"out", "home", "hook", "config", "net"} {
		r := res[id]
		if strings.Contains(r, "exit status 0") || strings.Contains(r, "connected") || strings.Contains(r, "[models.m]") {
			t.Errorf("%s was not refused: %s", id, r)
		}
	}
	for _, id := range []string{"out", "hook", "config"} {
		if !strings.Contains(res[id], "outside_sandbox: true") {
			t.Errorf("%s: the model is not told how to ask: %s", id, res[id])
		}
	}
	if r := res["esc"]; !strings.Contains(r, "non-interactive") {
		t.Errorf("the escalation: %s", r)
	}
	var deniedEvent bool
	for _, ev := range events(t, stdout) {
		if ev["type"] == "approval_resolved" {
			a, _ := ev["approval"].(map[string]any)
			deniedEvent = a["status"] == "denied" && ev["call_id"] == "esc"
		}
	}
	if !deniedEvent {
		t.Errorf("--json has no approval_resolved denied for esc:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Error("the write outside happened")
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("a hook was written")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git", "config")); string(b) != "[core]\n" {
		t.Errorf(".git/config changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Error("the denied escalation ran")
	}

	// The person allows it on the command line: it runs outside the sandbox.
	_, stderr, status = runIn(t, dir, home, "-p", "again", "--allow", "bash(touch *)")
	if status != cli.ExitOK {
		t.Errorf("with --allow: exit status %d\n%s", status, stderr)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err != nil {
		t.Errorf("the allowed escalation did not run: %s", toolResults(t, fake, 3)["esc2"])
	}
}

// TestModeAskOneShot (issue 31): --mode ask denies every command in -p (exit 6), and
// --mode full runs them as before.
func TestModeAskOneShot(t *testing.T) {
	outside := t.TempDir()
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "a", Name: "bash", Args: bashArgs("touch "+outside+"/a", false)}}}, fakemodel.Turn{Text: "No."},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "b", Name: "bash", Args: bashArgs("touch "+outside+"/b", false)}}}, fakemodel.Turn{Text: "Yes."})
	home := profileHome(t, "anthropic-messages", fake.URL, "\n[approvals]\nmode = \"workspace\"\n")
	_, stderr, status := runIn(t, t.TempDir(), home, "-p", "touch", "--mode", "ask")
	if status != cli.ExitDenied || !strings.Contains(stderr, "denied") {
		t.Errorf("--mode ask: exit %d, stderr:\n%s", status, stderr)
	}
	if _, err := os.Stat(filepath.Join(outside, "a")); err == nil {
		t.Error("ask mode ran the command")
	}
	_, stderr, status = runIn(t, t.TempDir(), home, "-p", "touch", "--mode", "full")
	if status != cli.ExitOK {
		t.Errorf("--mode full: exit %d\n%s", status, stderr)
	}
	if _, err := os.Stat(filepath.Join(outside, "b")); err != nil {
		t.Error("full mode did not run the command")
	}
}

// TestChatAsksInline (issue 31): in ask mode the terminal chat asks about each command on
// its prompt: y runs it, n with a reason denies it and the model is told the reason; /mode
// shows and changes the mode.
func TestChatAsksInline(t *testing.T) {
	dir := t.TempDir()
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "one", Name: "bash", Args: bashArgs("touch "+dir+"/one", false)}}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "two", Name: "bash", Args: bashArgs("touch "+dir+"/two", false)}}},
		fakemodel.Turn{Text: "Done."})
	home := profileHome(t, "anthropic-messages", fake.URL, "\n[approvals]\nmode = \"ask\"\n")
	chat := startChat(t, "MYCO_HOME="+home)
	chat.say(t, fake, "touch two files", 1)
	waitText(t, chat, "? allow bash: touch "+dir+"/one")
	chat.say(t, fake, "y", 2)
	waitText(t, chat, "? allow bash: touch "+dir+"/two")
	chat.say(t, fake, "n not that one", 3)
	waitText(t, chat, "Done.")
	if _, err := os.Stat(filepath.Join(dir, "one")); err != nil {
		t.Error("the allowed command did not run")
	}
	if _, err := os.Stat(filepath.Join(dir, "two")); err == nil {
		t.Error("the denied command ran")
	}
	if r := toolResults(t, fake, 2)["two"]; !strings.Contains(r, "not that one") {
		t.Errorf("the model is not told the reason: %s", r)
	}
	io.WriteString(chat.stdin, "/mode full\n")
	waitText(t, chat, "mode full: every command")
	chat.quit(t)
}

// waitText waits for s on the chat's stdout or stderr.
func waitText(t *testing.T, c *chatProc, s string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(c.stderr.String()+c.stdout.String(), s); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the chat never said %q; stderr:\n%s\nstdout:\n%s", s, c.stderr, c.stdout)
		}
	}
}
