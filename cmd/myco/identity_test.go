package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/hosts/proto"
)

// TestBuildsDoNotShareHostDaemon: two builds of one version (the second linked with
// other flags) name themselves apart in --version and in the host's hello, and their
// `myco --mode host` reach host daemons of their own in one host directory; each build
// finds its own daemon again.
func TestBuildsDoNotShareHostDaemon(t *testing.T) {
	a := binary(t)
	b := filepath.Join(t.TempDir(), "myco-b")
	// The test binary's release version: dev, without a tag (internal/build's Release).
	const version = "dev"
	if out, err := exec.Command("go", "build", "-ldflags=-X main.version="+version, "-o", b, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the second myco: %v\n%s", err, out)
	}
	versions := map[string]string{}
	for _, bin := range []string{a, b} {
		out, err := exec.Command(bin, "--version").Output()
		if err != nil || !strings.HasPrefix(string(out), "myco "+version+" (") || !strings.Contains(string(out), ", build ") {
			t.Fatalf("%s --version = %q, %v; want myco %s (…, build ID)", bin, out, err, version)
		}
		versions[bin] = strings.TrimSpace(strings.TrimPrefix(string(out), "myco "))
	}
	if versions[a] == versions[b] {
		t.Fatalf("both builds say %q, want two builds told apart", versions[a])
	}

	dir := daemonDir(t)
	hello := func(bin string) proto.Hello {
		t.Helper()
		in, _ := json.Marshal(proto.Msg{Hello: &proto.Hello{Protocol: proto.Version, Version: "test"}})
		cmd := exec.Command(bin, "--mode", "host", "--host-dir", dir, "--host-idle", "30s")
		cmd.Stdin = bytes.NewReader(append(in, '\n'))
		cmd.Env = os.Environ()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var m proto.Msg
		line, _, _ := strings.Cut(string(out), "\n")
		if err != nil || json.Unmarshal([]byte(line), &m) != nil || m.Hello == nil {
			t.Fatalf("%s --mode host = %q, %v; stderr:\n%s", bin, out, err, stderr.String())
		}
		return *m.Hello
	}
	ha, hb, ha2 := hello(a), hello(b), hello(a)
	if ha.PID == 0 || ha.NoDaemon != "" || hb.NoDaemon != "" {
		t.Fatalf("hellos %+v and %+v, want both from a daemon", ha, hb)
	}
	if ha.PID == hb.PID || ha.Instance == hb.Instance {
		t.Errorf("the two builds share the daemon pid %d (instance %s)", ha.PID, ha.Instance)
	}
	if ha2.PID != ha.PID || ha2.Instance != ha.Instance {
		t.Errorf("the first build reached daemon %d again, want its own %d", ha2.PID, ha.PID)
	}
	if ha.Version != versions[a] || hb.Version != versions[b] {
		t.Errorf("hello versions %q and %q, want what --version says: %q and %q", ha.Version, hb.Version, versions[a], versions[b])
	}
	if socks, _ := filepath.Glob(filepath.Join(dir, "*.sock")); len(socks) != 2 {
		t.Errorf("sockets in the host directory = %q, want one per build", socks)
	}
}
