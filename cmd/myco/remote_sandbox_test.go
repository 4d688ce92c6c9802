package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/cli"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/sshdtest"
)

// TestSandboxOnSSHHost (issue 31): in workspace mode a bash call on a remote host reached
// over the suite's real sshd runs in that host's own sandbox, applied by its host daemon:
// a write in the daemon's working directory goes ahead; a write outside it, a hook written
// into its repository's .git/hooks and a read of the host's myco home are refused; a call
// outside the sandbox asks, so -p denies it.
func TestSandboxOnSSHHost(t *testing.T) {
	needSandbox(t)
	srv := sshdtest.Start(t)
	if err := os.MkdirAll(filepath.Join(srv.Home, ".local", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binary(t), filepath.Join(srv.Home, ".local", "bin", "myco")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(srv.Home, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(srv.Home, ".git", "config"), []byte("[core]\n"), 0o644)
	os.MkdirAll(filepath.Join(srv.Home, ".myco"), 0o700)
	os.WriteFile(filepath.Join(srv.Home, ".myco", "approval.key"), []byte("remote-secret"), 0o600)
	outside := t.TempDir()
	remote := func(id, command string, escalate bool) fakemodel.ToolCall {
		args := strings.TrimSuffix(bashArgs(command, escalate), "}") + `,"host":"devbox"}`
		return fakemodel.ToolCall{ID: id, Name: "bash", Args: args}
	}
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{
			remote("in", "echo ok > inside.txt && cat inside.txt && pwd", false),
			remote("out", "echo x > "+outside+"/x", false),
			remote("hook", "echo x > .git/hooks/pre-commit", false),
			remote("key", "cat ~/.myco/approval.key", false),
			remote("esc", "touch "+outside+"/escaped", true),
		}},
		fakemodel.Turn{Text: "Done."})
	home := profileHome(t, "anthropic-messages", fake.URL, "\n[approvals]\nmode = \"workspace\"\n")
	t.Setenv("HOME", srv.Home)
	_, stderr, status := runIn(t, t.TempDir(), home, "-p", "on devbox")
	if status != cli.ExitDenied {
		t.Errorf("exit status %d, want %d\n%s", status, cli.ExitDenied, stderr)
	}
	res := toolResults(t, fake, 1)
	if r := res["in"]; !strings.Contains(r, "ok") || !strings.Contains(r, "exit status 0") {
		t.Errorf("the write in the host's directory: %s", r)
	}
	for _, id := range []string{"out", "hook", "key"} {
		if r := res[id]; strings.Contains(r, "exit status 0") || strings.Contains(r, "remote-secret") {
			t.Errorf("%s was not refused on the host: %s", id, r)
		}
	}
	if !strings.Contains(res["out"], "outside_sandbox: true") {
		t.Errorf("the model is not told how to ask: %s", res["out"])
	}
	if !strings.Contains(res["esc"], "non-interactive") {
		t.Errorf("the escalation: %s", res["esc"])
	}
	for _, p := range []string{filepath.Join(outside, "x"), filepath.Join(srv.Home, ".git", "hooks", "pre-commit"), filepath.Join(outside, "escaped")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}
