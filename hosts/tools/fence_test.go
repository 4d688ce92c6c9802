package tools

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"myco.dev/hosts/sandbox"
	"myco.dev/internal/needs"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

// TestBashSandbox: under WithSandbox an exec and a start run fenced, with TMPDIR set to
// the private directory, and a refusal tells the model how to ask to run outside.
func TestBashSandbox(t *testing.T) {
	f, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := f.Support(); !s.Landlock || !s.Net {
		needs.Missing(t, "no sandbox: %s", s)
	}
	dir, tmp, outside := t.TempDir(), t.TempDir(), t.TempDir()
	b := NewBash(BashOptions{})
	defer b.Close()
	ctx := WithWorkDir(context.Background(), dir)
	ctx = WithSandbox(ctx, Fenced{Fence: f, Spec: sandbox.Spec{Writable: []string{dir, tmp}}, TmpDir: tmp, Mode: "workspace"})
	call := func(in map[string]any) Result {
		raw, _ := json.Marshal(in)
		return b.Call(ctx, "o", raw)
	}
	res := call(map[string]any{"command": "echo in > a && echo $TMPDIR && touch $TMPDIR/t"})
	if res.IsError || !strings.Contains(res.Text, tmp) || !strings.Contains(res.Text, "exit status 0") {
		t.Errorf("a write inside: %+v", res)
	}
	res = call(map[string]any{"command": "echo out > " + outside + "/x"})
	if !strings.Contains(res.Text, "outside_sandbox: true") || strings.Contains(res.Text, "exit status 0") {
		t.Errorf("a write outside: %+v", res)
	}
	if _, err := os.Stat(outside + "/x"); err == nil {
		t.Error("the write outside happened")
	}
	res = call(map[string]any{"action": "start", "command": "bash --norc", "outside_sandbox": false, "justification": "x"})
	if res.IsError {
		t.Fatalf("start: %+v", res)
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(res.Text, "session_id: "), "\n")
	res = call(map[string]any{"action": "write", "session_id": id, "input": "touch " + outside + "/y; echo rc=$?"})
	if !strings.Contains(res.Text, "rc=1") {
		t.Errorf("a session's write outside: %+v", res)
	}
}
