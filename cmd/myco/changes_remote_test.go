package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"myco.dev/client"
	"myco.dev/internal/fakemodel"
	"myco.dev/internal/sshdtest"
)

// TestChangesRemote (issue 30): a turn of myco -p changes files on a host reached over a
// real sshd (bash: sed -i, >, rm, chmod +x, a symlink, a file in a new subdirectory); the
// host's daemon captures its directory in the host's own store; after a restart the API
// lists the changes under the host's name, and an undo and a redo put the files on the
// host back byte for byte.
func TestChangesRemote(t *testing.T) {
	// The host's login directory is the project: its tools start there, and its captures
	// take it.
	proj := filepath.Join(t.TempDir(), "proj")
	os.MkdirAll(proj, 0o755)
	srv := sshdtest.StartIn(t, proj)
	if err := os.MkdirAll(filepath.Join(srv.Home, ".local", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binary(t), filepath.Join(srv.Home, ".local", "bin", "myco")); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"a.txt": "an old line\n", "c.txt": "to delete\n", "run.sh": "#!/bin/sh\n"} {
		os.WriteFile(filepath.Join(proj, name), []byte(data), 0o644)
	}
	cmd, _ := json.Marshal(map[string]string{"host": "devbox", "command": "sed -i 's/old/new/' a.txt && echo made > new.txt && rm c.txt && " +
		"chmod +x run.sh && ln -s a.txt link && mkdir -p sub && echo deep > sub/f.txt"})
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "r1", Name: "bash", Args: string(cmd)}}},
		fakemodel.Turn{Text: "changed on devbox"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	before := readTree(t, proj)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	p := exec.CommandContext(ctx, binary(t), "--json", "-p", "change the files on devbox")
	p.Dir = t.TempDir()
	p.Env = append(os.Environ(), "HOME="+srv.Home, "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	out, err := p.Output()
	if err != nil {
		t.Fatalf("myco -p: %v\n%s", err, out)
	}
	var id string
	var hosts []string
	for _, ev := range events(t, string(out)) {
		if ev["type"] == "session" {
			id, _ = ev["session"].(string)
		}
		if ev["type"] == "changes" {
			h, _ := ev["host"].(string)
			hosts = append(hosts, h)
		}
	}
	if id == "" || len(hosts) != 1 || hosts[0] != "devbox" {
		t.Fatalf("--json: session %q, changes events of hosts %v; want one, devbox:\n%s", id, hosts, out)
	}
	after := readTree(t, proj)

	_, u, stderr := startServerEnv(t, home, []string{"HOME=" + srv.Home})
	defer func() {
		if t.Failed() {
			t.Logf("server:\n%s", stderr)
		}
	}()
	c := client.New(u)
	turn := 0
	ch, err := c.Changes(ctx, id, client.ChangesOptions{Turn: &turn})
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Hosts) != 1 || ch.Hosts[0].Host != "devbox" || ch.Hosts[0].Error != "" {
		t.Fatalf("changes = %+v, want devbox's", ch.Hosts)
	}
	var paths []string
	for _, f := range ch.Hosts[0].Files {
		paths = append(paths, f.Status+" "+f.Path)
	}
	got := strings.Join(paths, ", ")
	for _, want := range []string{"modified a.txt", "added new.txt", "deleted c.txt", "modified run.sh", "added link", "added sub/f.txt"} {
		if !strings.Contains(got, want) {
			t.Errorf("devbox's changes %s lack %s", got, want)
		}
	}
	if strings.Contains(got, ".local/state") {
		t.Errorf("devbox's changes list the host's own store: %s", got)
	}
	if _, err := c.UndoTurn(ctx, id, "u1", "", 0, nil); err != nil {
		t.Fatal(err)
	}
	if d := diffTrees(readTree(t, proj), before); d != "" {
		t.Errorf("after the undo on devbox:\n%s", d)
	}
	if _, err := c.RedoTurn(ctx, id, "r1", "", 0, nil); err != nil {
		t.Fatal(err)
	}
	if d := diffTrees(readTree(t, proj), after); d != "" {
		t.Errorf("after the redo on devbox:\n%s", d)
	}
}
