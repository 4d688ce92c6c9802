package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/agent/model"
	"myco.dev/hosts"
	"myco.dev/hosts/proto"
	"myco.dev/hosts/tools"
	"myco.dev/internal/fakemodel"
)

// A real bash exec reports its output while it runs; loaded at that moment (as after a
// crash), the session shows the last output seen in the call's unknown outcome.
func TestUnknownOutcomeShowsLastOutput(t *testing.T) {
	f := newFixture(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "build")}},
		fakemodel.Turn{Text: "built"},
	)
	bash := tools.NewBash(tools.BashOptions{})
	t.Cleanup(bash.Close)
	// The command goes on until the test has seen its progress (at most 10 s), so the
	// progress never loses a race with the result on a loaded machine.
	seen := filepath.Join(t.TempDir(), "seen")
	f.tools.run = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		cmd := fmt.Sprintf("echo compiling step 1; echo compiling step 2 >&2; for i in $(seq 1000); do [ -e %s ] && break; sleep 0.01; done", seen)
		args, _ := json.Marshal(map[string]string{"action": "exec", "command": cmd})
		r := bash.Call(ctx, "o1", args)
		return model.ToolResult{Text: r.Text, IsError: r.IsError}
	}
	var during *Session
	var progress []toolProgress
	f.sink = func(ev event) {
		if p, ok := ev.(toolProgress); ok {
			progress = append(progress, p)
			if during == nil && strings.Contains(p.Output, "compiling step 1") {
				during = loadFresh(t, f.store, f.id)
				os.WriteFile(seen, nil, 0o600)
			}
		}
	}
	f.bind(t, "owner-1", nil)
	if _, err := f.submit(t, "build it"); err != nil {
		t.Fatal(err)
	}
	if len(progress) == 0 || during == nil {
		t.Fatal("no progress was saved while the call ran")
	}
	th := during.Latest()
	last := th.Entries[len(th.Entries)-1]
	r := last.Message.Parts[0].ToolResult
	if !last.Recovered || r == nil || !r.Unknown || !strings.Contains(r.Text, "last output seen") || !strings.Contains(r.Text, "compiling step 1") {
		t.Fatalf("recovered outcome = %+v, want an unknown outcome with the last output seen", r)
	}
	// Once the call returned, its result supersedes the progress.
	done := loadFresh(t, f.store, f.id).Latest()
	if res := done.Entries[2].Message.Parts[0].ToolResult; res.Unknown || !strings.Contains(res.Text, "compiling step 2") {
		t.Errorf("final result = %+v", res)
	}
}

// A remote call reports its host's progress too: loaded while it runs (as after a crash),
// the session quotes the remote output in the call's unknown outcome.
func TestUnknownOutcomeShowsRemoteOutput(t *testing.T) {
	dir := t.TempDir()
	ssh := filepath.Join(dir, "ssh") // drops the options and the alias, runs the rest here
	writeScript(t, ssh, `while [ "$1" = -o ]; do shift 2; done; shift; exec "$@"`)
	// The host sends progress only when the call asks for it, then waits until the test has
	// seen it (at most 10 s), so the progress never loses a race with the result.
	seen := filepath.Join(dir, "seen")
	host := filepath.Join(dir, "host")
	writeScript(t, host, fmt.Sprintf(`echo '{"hello":{"protocol":%d,"version":"fake"}}'
read hello; read call
id=$(echo "$call" | sed 's/^{"id":\([0-9]*\),.*/\1/')
case "$call" in *'"progress":true'*) echo "{\"id\":$id,\"progress\":{\"tail\":\"remote step 1\"}}"
	for i in $(seq 1000); do [ -e %s ] && break; sleep 0.01; done ;; esac
echo "{\"id\":$id,\"result\":{\"text\":\"remote step 1, remote step 2\"}}"`, proto.Version, seen))
	remote := hosts.NewRemote(hosts.RemoteSpec{Alias: "devbox", Command: []string{"sh", host}},
		hosts.RemoteOptions{SSH: ssh, MaxImageBase64Bytes: 1 << 20, Hello: proto.Hello{Version: "test"}})
	t.Cleanup(remote.Close)

	f := newFixture(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "build")}},
		fakemodel.Turn{Text: "built"},
	)
	f.tools.run = func(ctx context.Context, c model.ToolCall) model.ToolResult {
		r := remote.Call(ctx, "o1", "bash", []byte(`{"action":"exec","command":"make"}`))
		return model.ToolResult{Text: r.Text, IsError: r.IsError}
	}
	var during *Session
	f.sink = func(ev event) {
		if _, ok := ev.(toolProgress); ok && during == nil {
			during = loadFresh(t, f.store, f.id)
			os.WriteFile(seen, nil, 0o600)
		}
	}
	f.bind(t, "owner-1", nil)
	if _, err := f.submit(t, "build it"); err != nil {
		t.Fatal(err)
	}
	if during == nil {
		t.Fatal("no progress was saved while the remote call ran")
	}
	th := during.Latest()
	r := th.Entries[len(th.Entries)-1].Message.Parts[0].ToolResult
	if r == nil || !r.Unknown || !strings.Contains(r.Text, "last output seen") || !strings.Contains(r.Text, "remote step 1") {
		t.Fatalf("recovered outcome = %+v, want an unknown outcome with the remote's last output", r)
	}
}

func writeScript(t *testing.T, path, script string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}
