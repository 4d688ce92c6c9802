package hosts

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/hosts/mcp/mcptest"
	"myco.dev/hosts/proto"
	"myco.dev/internal/sshdtest"
)

// sshWorld is the shared sshd fixture (see myco.dev/internal/sshdtest) with the remotes its
// ~/.ssh/config names, each running the test binary.
type sshWorld struct {
	*sshdtest.Server
	specs []RemoteSpec
}

// startSSHD skips when sshd is missing, except in CI, where it fails.
func startSSHD(t testing.TB) *sshWorld {
	t.Helper()
	w := &sshWorld{Server: sshdtest.Start(t)}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	w.specs, err = LoadSSHConfig(SSHConfigOptions{Path: w.Config, Default: filepath.Join(u.HomeDir, ".ssh", "config")})
	if err != nil {
		t.Fatal(err)
	}
	for i := range w.specs {
		// sshd's non-interactive PATH is the system one; the test binary is elsewhere.
		w.specs[i].Command = []string{mycoBin}
	}
	return w
}

func (w *sshWorld) spec(t testing.TB, alias string) RemoteSpec {
	t.Helper()
	for _, s := range w.specs {
		if s.Alias == alias {
			return s
		}
	}
	t.Fatalf("alias %s not in %+v", alias, w.specs)
	return RemoteSpec{}
}

func sshOptions(t testing.TB) RemoteOptions {
	return RemoteOptions{MaxImageBase64Bytes: 1 << 20, AttachTimeout: 20 * time.Second, Hello: proto.Hello{Version: "test-1.0"}, Log: testLog(t)}
}

func callOf(host string) model.ToolCall {
	return model.ToolCall{ID: "c", Name: "bash", Input: json.RawMessage(`{"command":"true","host":"` + host + `"}`)}
}

func TestSSHConfigFromTempHome(t *testing.T) {
	w := startSSHD(t)
	var got []string
	for _, s := range w.specs {
		got = append(got, s.Alias+"@"+filepath.Base(s.Source))
		if s.ConfigFile != w.Config {
			t.Errorf("%s: ConfigFile = %q, want -F %s (HOME is not the passwd home)", s.Alias, s.ConfigFile, w.Config)
		}
		if s.Note != "" {
			t.Errorf("%s: Note = %q; an absolute Include needs none", s.Alias, s.Note)
		}
	}
	if strings.Join(got, " ") != "devbox@devbox.conf refused@config" {
		t.Errorf("hosts = %v", got)
	}
}

func TestSSHRemoteTools(t *testing.T) {
	w := startSSHD(t)
	h := newRemoteHarness(t, w.spec(t, "devbox"), sshOptions(t))
	ex := h.For("rt1")
	runToolSuite(t, ex, "devbox", t.TempDir())
	if st := h.Remote("devbox").Status(); st.State != StateAttached {
		t.Fatalf("Status = %+v", st)
	}

	// Kill the remote host daemon mid-call.
	res := hcall(t, ex, "bash", map[string]any{"command": "echo $PPID", "host": "devbox"})
	daemonPID, err := strconv.Atoi(strings.TrimSpace(strings.Split(res.Text, "\n")[0]))
	if err != nil {
		t.Fatalf("host pid from %q: %v", res.Text, err)
	}
	if hello := h.Remote("devbox").Status().Hello; hello.PID != daemonPID {
		t.Errorf("hello pid = %d, bash's parent = %d; want the daemon in both", hello.PID, daemonPID)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	var wg sync.WaitGroup
	var inFlight model.ToolResult
	wg.Go(func() {
		inFlight = hcall(t, ex, "bash", map[string]any{"command": "echo $$ > " + pidFile + "; sleep 3", "host": "devbox"})
	})
	sshdtest.WaitFor(t, 10*time.Second, "the remote call started", func() bool { _, err := os.Stat(pidFile); return err == nil })
	if err := syscall.Kill(daemonPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !inFlight.Unknown || !strings.Contains(inFlight.Text, "host devbox: the connection ended while this call was in flight") ||
		!strings.Contains(inFlight.Text, "the host daemon that ran it is gone") || !strings.Contains(inFlight.Text, "bash sessions b1 started there are gone") {
		t.Errorf("the call in flight = %+v, want an unknown outcome that says b1 is gone", inFlight)
	}
	res = hcall(t, ex, "bash", map[string]any{"action": "write", "session_id": "b1", "input": "echo hi\n", "host": "devbox"})
	if !strings.Contains(res.Text, `"b1" is unknown`) {
		t.Errorf("first call after the drop = %q", res.Text)
	}
	res = hcall(t, ex, "bash", map[string]any{"command": "echo $PPID", "host": "devbox"})
	if res.IsError || strings.TrimSpace(strings.Split(res.Text, "\n")[0]) == strconv.Itoa(daemonPID) {
		t.Errorf("after the re-attach = %q, want a new host daemon", res.Text)
	}
}

// TestSSHDropKeepsSession kills the ssh client with an exec call in flight: the remote
// host daemon keeps the bash session, which prints while no one is connected, and lets
// the call finish; the controller re-attaches at once, fetches the call's result, and bash
// read returns the session's output.
func TestSSHDropKeepsSession(t *testing.T) {
	w := startSSHD(t)
	o := sshOptions(t)
	var states stateLog
	o.OnState = states.add
	h := newRemoteHarness(t, w.spec(t, "devbox"), o)
	ex := h.For("rt1")
	dir := t.TempDir()
	flag, started := filepath.Join(dir, "go"), filepath.Join(dir, "started")
	wait := "while [ ! -e " + flag + " ]; do sleep 0.02; done; "
	res := hcall(t, ex, "bash", map[string]any{"action": "start", "host": "devbox", "command": "echo early; " + wait + "echo late; exec sleep 1000"})
	if res.IsError || !strings.Contains(res.Text, "early") {
		t.Fatalf("start = %+v", res)
	}
	var wg sync.WaitGroup
	var inFlight model.ToolResult
	wg.Go(func() {
		inFlight = hcall(t, ex, "bash", map[string]any{"host": "devbox", "command": "touch " + started + "; " + wait + "echo exec-done"})
	})
	sshdtest.WaitFor(t, 10*time.Second, "the call did not start", func() bool { _, err := os.Stat(started); return err == nil })
	r := h.Remote("devbox")
	r.mu.Lock()
	ssh := r.conn.cmd.Process.Pid
	r.mu.Unlock()
	syscall.Kill(ssh, syscall.SIGKILL)
	sshdtest.WaitFor(t, 10*time.Second, "the drop was not noticed", func() bool { return strings.Contains(states.String(), "dropped") })
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if inFlight.Unknown || inFlight.IsError || !strings.Contains(inFlight.Text, "exec-done") || !strings.Contains(inFlight.Text, "dropped while this call ran") {
		t.Errorf("the call in flight at the drop = %+v, want its result from the daemon", inFlight)
	}
	res = hcall(t, ex, "bash", map[string]any{"action": "read", "session_id": "b1", "timeout_secs": 5, "host": "devbox"})
	if res.IsError || !strings.Contains(res.Text, "late") || strings.Contains(res.Text, "early") {
		t.Errorf("read b1 after the re-attach = %+v, want the output produced while disconnected", res)
	}
	if got, want := states.String(), "attached/1 dropped/1 attached/2"; got != want {
		t.Errorf("OnState saw %s, want %s", got, want)
	}
}

// TestSSHProgress: a remote call through the harness and a real ssh passes the host's
// progress to the reporter in its ctx.
func TestSSHProgress(t *testing.T) {
	w := startSSHD(t)
	ex := newRemoteHarness(t, w.spec(t, "devbox"), sshOptions(t)).For("rt1")
	checkRemoteProgress(t, func(ctx context.Context, command string) (string, bool) {
		b, _ := json.Marshal(map[string]any{"command": command, "host": "devbox"})
		res := ex.Call(ctx, model.ToolCall{ID: "c", Name: "bash", Input: b})
		return res.Text, res.IsError
	})
}

func TestSSHConnectFailure(t *testing.T) {
	w := startSSHD(t)
	h := newRemoteHarness(t, w.spec(t, "refused"), sshOptions(t))
	res := hcall(t, h.For("rt1"), "bash", map[string]any{"command": "true", "host": "refused"})
	for _, want := range []string{"host refused: could not attach", "Connection refused", "ssh -o BatchMode=yes -F " + w.Config + " refused 'command -v"} {
		if !res.IsError || !strings.Contains(res.Text, want) {
			t.Errorf("call on a refused host = %q, lacks %q", res.Text, want)
		}
	}
}

func TestSSHCheck(t *testing.T) {
	w := startSSHD(t)
	ok := NewRemote(w.spec(t, "devbox"), sshOptions(t))
	defer ok.Close()
	res := ok.Check(t.Context())
	if len(res.Problems) != 0 || res.Path != mycoBin || !strings.HasPrefix(res.Version, "myco ") || res.Hello.Protocol == 0 {
		t.Errorf("Check(devbox) = %+v, want no problems", res)
	}
	if st := ok.Status(); st.State != StateLazy {
		t.Errorf("Check changed the controller's state: %+v", st)
	}
	missing := w.spec(t, "devbox")
	missing.Command = []string{"/nonexistent/myco"}
	bad := NewRemote(missing, sshOptions(t))
	defer bad.Close()
	if res := bad.Check(t.Context()); len(res.Problems) != 1 || !strings.Contains(res.Problems[0], "not on the PATH of a non-interactive ssh session") {
		t.Errorf("Check(no myco) = %+v", res)
	}
	refused := NewRemote(w.spec(t, "refused"), sshOptions(t))
	defer refused.Close()
	if res := refused.Check(t.Context()); len(res.Problems) != 1 || !strings.Contains(res.Problems[0], "Connection refused") || !strings.Contains(res.Problems[0], "BatchMode") {
		t.Errorf("Check(refused) = %+v", res)
	}
}

// BenchmarkRemoteRoundTrip reports a tool call over the attached ssh worker against a
// fresh `ssh ALIAS true` and against the same call on local, measured in one run.
func BenchmarkRemoteRoundTrip(b *testing.B) {
	w := startSSHD(b)
	spec := w.spec(b, "devbox")
	h := newRemoteHarness(b, spec, sshOptions(b))
	ex := h.For("bench")
	ctx := context.Background()
	call := func(host string) {
		res := ex.Call(ctx, callOf(host))
		if res.IsError {
			b.Fatal(res.Text)
		}
	}
	call("devbox") // attach
	const n = 20
	timeIt := func(f func()) time.Duration {
		start := time.Now()
		for range n {
			f()
		}
		return time.Since(start) / n
	}
	for b.Loop() {
		remote := timeIt(func() { call("devbox") })
		local := timeIt(func() { call("local") })
		fresh := timeIt(func() {
			if out, err := exec.Command("ssh", "-o", "BatchMode=yes", "-F", spec.ConfigFile, spec.Alias, "true").CombinedOutput(); err != nil {
				b.Fatalf("ssh true: %v %s", err, out)
			}
		})
		b.ReportMetric(float64(remote.Microseconds())/1000, "remote-ms/call")
		b.ReportMetric(float64(local.Microseconds())/1000, "local-ms/call")
		b.ReportMetric(float64(fresh.Microseconds())/1000, "ssh-true-ms")
		b.ReportMetric(float64(remote)/float64(fresh), "remote/ssh-true")
		b.ReportMetric(float64(remote)/float64(local), "remote/local")
	}
}

// mycoCmd runs the real binary as a user whose HOME is the world's temporary home.
func (w *sshWorld) mycoCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), mycoBin, args...)
	cmd.Env = append(os.Environ(), "HOME="+w.Home, "MYCO_HOME="+filepath.Join(w.Dir, "mycohome"), "MYCO_CONFIG=", "MYCO_PROFILE=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestSSHInstall installs the real binary into the remote's (temporary) home with
// `myco hosts install`, after a refusal for another platform, and `myco hosts check`
// then passes.
func TestSSHInstall(t *testing.T) {
	w := startSSHD(t)
	bin := filepath.Join(w.Home, ".local", "bin")
	// A uname that claims another platform comes first on the remote PATH.
	writeFile(t, filepath.Join(bin, "uname"), "#!/bin/sh\necho Darwin arm64\n")
	if err := os.Chmod(filepath.Join(bin, "uname"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := w.mycoCmd(t, "hosts", "install", "devbox")
	if err == nil || !strings.Contains(out, "devbox runs darwin/arm64 (uname -sm: Darwin arm64): no myco here is built for darwin/arm64") ||
		!strings.Contains(out, "make release") {
		t.Errorf("install on another platform: %v %q, want a refusal naming both", err, out)
	}
	if _, err := os.Stat(filepath.Join(bin, "myco")); err == nil {
		t.Errorf("install copied myco to a host of another platform")
	}
	os.Remove(filepath.Join(bin, "uname"))

	out, err = w.mycoCmd(t, "hosts", "check", "devbox")
	if err == nil || !strings.Contains(out, "Run `myco hosts install devbox`") {
		t.Errorf("check before install: %v %q, want a pointer to myco hosts install", err, out)
	}
	out, err = w.mycoCmd(t, "hosts", "install", "devbox")
	if err != nil || !strings.Contains(out, "installed myco") || !strings.Contains(out, "devbox is ready: host protocol") || strings.Contains(out, "warning") {
		t.Fatalf("install: %v %q", err, out)
	}
	want, _ := os.Stat(mycoBin)
	got, err := os.Stat(filepath.Join(bin, "myco"))
	if err != nil || got.Size() != want.Size() || got.Mode().Perm() != 0o755 {
		t.Fatalf("installed file = %v %v, want %d bytes, mode 0755", got, err, want.Size())
	}
	if left, _ := filepath.Glob(filepath.Join(bin, ".myco-install-*")); len(left) > 0 {
		t.Errorf("install left temporary files: %v", left)
	}
	out, err = w.mycoCmd(t, "hosts", "check", "devbox")
	if err != nil || !strings.Contains(out, "myco on devbox: "+filepath.Join(bin, "myco")) || !strings.Contains(out, "devbox is ready") ||
		!strings.Contains(out, "host daemon: pid ") || !strings.Contains(out, "bash sessions for 30m0s") {
		t.Errorf("check after install: %v %q", err, out)
	}
}

// TestSSHCheckAttachTimeout: myco hosts check bounds ssh by the config's
// attach_timeout_secs, here against a port that accepts and never speaks.
func TestSSHCheckAttachTimeout(t *testing.T) {
	w := startSSHD(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	writeFile(t, filepath.Join(w.Home, ".ssh", "conf.d", "silent.conf"), fmt.Sprintf("Host silent\n\tHostName 127.0.0.1\n\tPort %d\n", l.Addr().(*net.TCPAddr).Port))
	writeFile(t, filepath.Join(w.Dir, "mycohome", "profiles", "default", "config.toml"), "attach_timeout_secs = 1\n")
	start := time.Now()
	out, err := w.mycoCmd(t, "hosts", "check", "silent")
	if err == nil || !strings.Contains(out, "ssh did not finish within 1s (attach_timeout_secs)") {
		t.Errorf("check of a silent host: %v %q, want the 1 s bound of the config", err, out)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("check took %s", d)
	}
}

// TestSSHRemoteMCP runs @modelcontextprotocol/server-everything over stdio on a host
// reached through a real sshd: its tools are listed there, over the host protocol, and
// its echo answers through the harness; the owner's inventory of the host lists it, and
// releasing the owner ends it there.
func TestSSHRemoteMCP(t *testing.T) {
	w := startSSHD(t)
	bin := mcptest.NPMServer(t, "mcp-server-everything") // the remote is this machine
	h, err := NewHarness(Options{Remotes: []RemoteSpec{w.spec(t, "devbox")}, Remote: sshOptions(t), Log: testLog(t),
		RemoteMCP: []RemoteMCP{{Host: "devbox", Server: proto.MCPServer{Name: "everything", Command: bin, Args: []string{"stdio"}, StartupTimeoutMS: 30000}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.Discover(t.Context())
	if st := h.MCPStatuses(); len(st) != 1 || st[0].State != MCPListed || st[0].Host != "devbox" {
		t.Fatalf("MCPStatuses = %+v", st)
	}
	var echo model.ToolSpec
	for _, s := range h.Specs() {
		if s.Name == "mcp__everything__echo" {
			echo = s
		}
	}
	if !strings.Contains(echo.Description, "Echoes") || !strings.Contains(string(echo.Schema), `"message"`) {
		t.Errorf("echo's spec = %+v, want the server's description and schema", echo)
	}
	ex := h.For("rt1")
	res := ex.Call(t.Context(), model.ToolCall{ID: "c", Name: "mcp__everything__echo", Input: json.RawMessage(`{"message":"over ssh"}`)})
	if res.IsError || res.Text != "Echo: over ssh" {
		t.Fatalf("echo = %+v", res)
	}
	var pid int
	for _, inv := range h.Inventory(t.Context(), "rt1") {
		if inv.Host == "devbox" && len(inv.Resources.MCP) == 1 && inv.Resources.MCP[0].State == "running" {
			pid = inv.Resources.MCP[0].PID
		}
	}
	if pid == 0 {
		t.Fatalf("inventory = %+v, want everything running on devbox", h.Inventory(t.Context(), "rt1"))
	}
	h.Release("rt1")
	sshdtest.WaitFor(t, 10*time.Second, "the server on devbox ended after the release", func() bool { return sshdtest.Gone(pid) })
}
