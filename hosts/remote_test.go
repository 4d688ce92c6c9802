package hosts

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"myco.dev/hosts/proto"
	"myco.dev/hosts/tools"
	"myco.dev/internal/sshdtest"
)

// fakeSSH is an ssh stand-in for tests without sshd: it drops the options and the alias
// and runs the remote words here. The alias "unreachable" fails the way ssh does.
const fakeSSH = `#!/bin/sh
while [ $# -gt 0 ]; do
	case "$1" in
	-o|-F) shift 2 ;;
	*) break ;;
	esac
done
alias=$1; shift
if [ "$alias" = unreachable ]; then
	echo "ssh: Could not resolve hostname unreachable: Name or service not known" >&2
	exit 255
fi
exec "$@"
`

func fakeSSHPath(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ssh")
	if err := os.WriteFile(p, []byte(fakeSSH), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func testRemoteOptions(t *testing.T) RemoteOptions {
	return RemoteOptions{
		SSH: fakeSSHPath(t), MaxImageBase64Bytes: 1 << 20, AttachTimeout: 10 * time.Second,
		Hello: proto.Hello{Version: "test-1.0"}, Log: testLog(t),
	}
}

func newTestRemote(t *testing.T, spec RemoteSpec, o RemoteOptions) *Remote {
	t.Helper()
	if spec.Alias == "" {
		spec.Alias = "devbox"
	}
	if spec.Command == nil {
		spec.Command = []string{mycoBin, "--host-dir", sshdtest.NewDaemonDir(t)}
	}
	r := NewRemote(spec, o)
	t.Cleanup(r.Close)
	return r
}

func rcall(t *testing.T, r *Remote, owner string, in map[string]any) (string, bool) {
	t.Helper()
	b, _ := json.Marshal(in)
	res := r.Call(t.Context(), owner, "bash", b)
	return res.Text, res.IsError
}

func TestRemoteArgv(t *testing.T) {
	r := NewRemote(RemoteSpec{Alias: "devbox"}, RemoteOptions{MaxImageBase64Bytes: 42})
	if got, want := strings.Join(r.Argv(), " "), "ssh -o BatchMode=yes devbox myco --mode host --max-image-base64-bytes 42"; got != want {
		t.Errorf("Argv = %q, want %q", got, want)
	}
	if got, want := r.CheckCommand(), "ssh -o BatchMode=yes devbox 'command -v myco; myco --version'"; got != want {
		t.Errorf("CheckCommand = %q, want %q", got, want)
	}
	r = NewRemote(RemoteSpec{Alias: "devbox", ConfigFile: "/tmp/h/.ssh/config"}, RemoteOptions{MaxImageBase64Bytes: 42})
	if got, want := strings.Join(r.Argv(), " "), "ssh -o BatchMode=yes -F /tmp/h/.ssh/config devbox myco --mode host --max-image-base64-bytes 42"; got != want {
		t.Errorf("Argv = %q, want %q", got, want)
	}
}

func TestRemoteLazyAttachAndConcurrentCalls(t *testing.T) {
	r := newTestRemote(t, RemoteSpec{}, testRemoteOptions(t))
	if st := r.Status(); st.State != StateLazy {
		t.Fatalf("Status before any call = %+v, want lazy", st)
	}
	const n = 20
	var wg sync.WaitGroup
	errs := make([]string, n)
	for i := range n {
		wg.Go(func() {
			text, isErr := rcall(t, r, "o1", map[string]any{"command": fmt.Sprintf("sleep 0.%02d; echo call-%d", (n-i)*3, i)})
			if isErr || !strings.Contains(text, fmt.Sprintf("call-%d\n", i)) {
				errs[i] = text
			}
		})
	}
	wg.Wait()
	for i, e := range errs {
		if e != "" {
			t.Errorf("call %d = %q", i, e)
		}
	}
	st := r.Status()
	if st.State != StateAttached || st.Hello.Protocol != proto.Version {
		t.Errorf("Status = %+v, want attached with the host's hello", st)
	}
}

func TestRemoteAttachFailures(t *testing.T) {
	hello := func(protocol int) string {
		return fmt.Sprintf(`echo '{"hello":{"protocol":%d,"version":"9.9.9"}}'; exec cat >/dev/null`, protocol)
	}
	tests := []struct {
		name    string
		spec    RemoteSpec
		timeout time.Duration
		want    []string
	}{
		{"ssh fails", RemoteSpec{Alias: "unreachable"}, 0,
			[]string{"host unreachable: could not attach", "status 255", "Could not resolve hostname unreachable", "ssh -o BatchMode=yes unreachable 'command -v"}},
		{"myco not found", RemoteSpec{Command: []string{"sh", "-c", "echo 'sh: 1: myco: not found' >&2; exit 127"}}, 0,
			[]string{"not on the host's non-interactive PATH", "myco: not found", "command -v sh"}},
		{"version mismatch", RemoteSpec{Command: []string{"sh", "-c", hello(proto.Version + 1)}}, 0,
			[]string{"9.9.9", "test-1.0", fmt.Sprintf("protocol %d", proto.Version), fmt.Sprintf("speaks %d", proto.Version+1), "install the same myco"}},
		{"login script noise", RemoteSpec{Command: []string{"sh", "-c", "echo Welcome to devbox; exit 1"}}, 0,
			[]string{"status 1", "not the protocol", "login script"}},
		{"no hello in time", RemoteSpec{Command: []string{"sh", "-c", "exec sleep 30"}}, 300 * time.Millisecond,
			[]string{"no hello from the host within 300ms", "attach_timeout_secs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testRemoteOptions(t)
			if tt.timeout > 0 {
				o.AttachTimeout = tt.timeout
			}
			var states stateLog
			o.OnState = states.add
			r := newTestRemote(t, tt.spec, o)
			start := time.Now()
			text, isErr := rcall(t, r, "o1", map[string]any{"command": "true"})
			if !isErr {
				t.Fatalf("call = %q, want an error", text)
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("error %q lacks %q", text, w)
				}
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("the failed attach took %s", time.Since(start))
			}
			if st := r.Status(); st.State != StateError || st.Err == "" {
				t.Errorf("Status = %+v, want error", st)
			}
			if got := states.String(); got != "error/0" {
				t.Errorf("OnState saw %s, want error/0", got)
			}
		})
	}
}

// TestRemoteDaemonGone kills the host daemon mid-call: the calls in flight get unknown
// outcomes (a new daemon answers the re-attach), the first says the earlier sessions are
// gone, and the next calls run on the new daemon.
func TestRemoteDaemonGone(t *testing.T) {
	o := testRemoteOptions(t)
	var states stateLog
	o.OnState = states.add
	r := newTestRemote(t, RemoteSpec{}, o)
	text, isErr := rcall(t, r, "o1", map[string]any{"action": "start", "command": "cat"})
	if isErr || !strings.HasPrefix(text, "session_id: b1") {
		t.Fatalf("start = %q", text)
	}
	var wg sync.WaitGroup
	var slow tools.Result
	wg.Go(func() { slow = rcallResult(t, r, "o1", map[string]any{"command": "sleep 3"}) })
	killer := rcallResult(t, r, "o1", map[string]any{"command": "sleep 0.2; kill -9 $PPID; sleep 3"})
	wg.Wait()
	notices := 0
	for _, got := range []tools.Result{killer, slow} {
		if !got.Unknown || got.IsError || !strings.Contains(got.Text, "host devbox: the connection ended while this call was in flight") ||
			!strings.Contains(got.Text, "the host daemon that ran it is gone") || !strings.Contains(got.Text, "outcome is unknown") {
			t.Errorf("call in flight when the daemon died = %+v, want an unknown outcome", got)
		}
		if strings.Contains(got.Text, "bash sessions b1 started there are gone") {
			notices++
		}
	}
	if notices != 1 {
		t.Errorf("%d of the calls in flight said that b1 is gone, want 1: %q, %q", notices, killer.Text, slow.Text)
	}
	text, isErr = rcall(t, r, "o1", map[string]any{"action": "read", "session_id": "b1"})
	if !isErr || !strings.Contains(text, `"b1" is unknown`) || strings.Contains(text, "[myco:") {
		t.Errorf("read b1 after the drop = %q, want unknown and no second notice", text)
	}
	if st := r.Status(); st.State != StateAttached {
		t.Errorf("Status after the re-attach = %+v, want attached", st)
	}
	text, isErr = rcall(t, r, "o1", map[string]any{"command": "echo again"})
	if isErr || strings.Contains(text, "[myco:") {
		t.Errorf("second call after the drop = %q, want a plain answer", text)
	}
	if got, want := states.String(), "attached/1 dropped/1 attached/2"; got != want {
		t.Errorf("OnState saw %s, want %s", got, want)
	}
}

// TestRemoteDropKeepsDaemon kills the host process (the proxy) mid-call: the controller
// re-attaches to the same daemon, fetches the result of the call in flight, and reads the
// output the session produced while disconnected.
func TestRemoteDropKeepsDaemon(t *testing.T) {
	o := testRemoteOptions(t)
	var states stateLog
	o.OnState = states.add
	r := newTestRemote(t, RemoteSpec{}, o)
	dir := t.TempDir()
	flag, started := filepath.Join(dir, "go"), filepath.Join(dir, "started")
	wait := "while [ ! -e " + flag + " ]; do sleep 0.02; done; "
	text, isErr := rcall(t, r, "o1", map[string]any{"action": "start", "command": "echo early; " + wait + "echo late; exec cat"})
	if isErr || !strings.HasPrefix(text, "session_id: b1") {
		t.Fatalf("start = %q", text)
	}
	var wg sync.WaitGroup
	var inFlight tools.Result
	wg.Go(func() {
		inFlight = rcallResult(t, r, "o1", map[string]any{"command": "touch " + started + "; " + wait + "echo exec-done"})
	})
	sshdtest.WaitFor(t, 5*time.Second, "the call did not start", func() bool { _, err := os.Stat(started); return err == nil })
	r.mu.Lock()
	proxy := r.conn.cmd.Process.Pid
	r.mu.Unlock()
	syscall.Kill(proxy, syscall.SIGKILL)
	sshdtest.WaitFor(t, 5*time.Second, "the drop was not noticed", func() bool { return strings.Contains(states.String(), "dropped") })
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if inFlight.Unknown || inFlight.IsError || !strings.Contains(inFlight.Text, "exec-done") ||
		!strings.Contains(inFlight.Text, "dropped while this call ran") || !strings.Contains(inFlight.Text, "same host daemon") {
		t.Errorf("call in flight at the drop = %+v, want its result fetched from the daemon", inFlight)
	}
	text, isErr = rcall(t, r, "o1", map[string]any{"action": "read", "session_id": "b1", "timeout_secs": 5})
	if isErr || !strings.Contains(text, "late") || strings.Contains(text, "early") || strings.Contains(text, "[myco:") {
		t.Errorf("read b1 after the re-attach = %q, want the output produced while disconnected", text)
	}
	if got, want := states.String(), "attached/1 dropped/1 attached/2"; got != want {
		t.Errorf("OnState saw %s, want %s", got, want)
	}
}

func rcallResult(t *testing.T, r *Remote, owner string, in map[string]any) tools.Result {
	t.Helper()
	b, _ := json.Marshal(in)
	return r.Call(t.Context(), owner, "bash", b)
}

// stateLog records what OnState reports.
type stateLog struct {
	mu  sync.Mutex // guards log
	log []string
}

func (l *stateLog) add(st Status) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, fmt.Sprintf("%s/%d", st.State, st.Attaches))
}

func (l *stateLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.log, " ")
}

func TestRemotePingDetectsHang(t *testing.T) {
	o := testRemoteOptions(t)
	o.PingInterval, o.PingMisses = 50*time.Millisecond, 3
	hung := fmt.Sprintf(`echo '{"hello":{"protocol":%d,"version":"hung"}}'; exec sleep 30`, proto.Version)
	r := newTestRemote(t, RemoteSpec{Command: []string{"sh", "-c", hung}}, o)
	if _, err := r.Attach(t.Context()); err != nil {
		t.Fatal(err)
	}
	sshdtest.WaitFor(t, 5*time.Second, "the hung host was not noticed", func() bool { return r.Status().State == StateDropped })
	if st := r.Status(); !strings.Contains(st.Err, "liveness pings") {
		t.Errorf("Status = %+v, want an error about the pings", st)
	}
}

func TestRemotePingKeepsLiveHost(t *testing.T) {
	o := testRemoteOptions(t)
	o.PingInterval = 20 * time.Millisecond
	r := newTestRemote(t, RemoteSpec{}, o)
	text, isErr := rcall(t, r, "o1", map[string]any{"command": "sleep 0.5; echo done"})
	if isErr || !strings.Contains(text, "done") {
		t.Fatalf("call = %q", text)
	}
	if st := r.Status(); st.State != StateAttached {
		t.Errorf("Status = %+v, want attached", st)
	}
}

func TestRemoteInventory(t *testing.T) {
	r := newTestRemote(t, RemoteSpec{}, testRemoteOptions(t))
	inv := r.Inventory(t.Context(), "o1")
	if !inv.LastKnown || !inv.Observed.IsZero() || inv.Resources.Bash != nil || !strings.Contains(inv.Err, "lazy") {
		t.Errorf("Inventory of a lazy remote = %+v, want last-known nothing", inv)
	}
	if st := r.Status(); st.State != StateLazy {
		t.Fatalf("Inventory connected the lazy remote: %+v", st)
	}
	if text, isErr := rcall(t, r, "o1", map[string]any{"action": "start", "command": "echo hi; exec cat"}); isErr {
		t.Fatal(text)
	}
	inv = r.Inventory(t.Context(), "o1")
	if inv.LastKnown || inv.Observed.IsZero() || len(inv.Resources.Bash) != 1 || inv.Resources.Bash[0].ID != "b1" {
		t.Fatalf("Inventory = %+v, want session b1", inv)
	}
	r.mu.Lock()
	proxy := r.conn.cmd.Process.Pid
	r.mu.Unlock()
	syscall.Kill(proxy, syscall.SIGKILL)
	sshdtest.WaitFor(t, 5*time.Second, "the drop was not noticed", func() bool { return r.Status().State == StateDropped })
	inv2 := r.Inventory(t.Context(), "o1")
	if !inv2.LastKnown || !reflect.DeepEqual(inv2.Resources, inv.Resources) || inv2.Err == "" {
		t.Errorf("Inventory after the drop = %+v, want the earlier data marked last-known", inv2)
	}
}

func TestRemoteRelease(t *testing.T) {
	r := newTestRemote(t, RemoteSpec{}, testRemoteOptions(t))
	rcall(t, r, "o1", map[string]any{"action": "start", "command": "exec cat"})
	rcall(t, r, "o2", map[string]any{"action": "start", "command": "exec cat"})
	r.Release(t.Context(), "o1")
	if text, _ := rcall(t, r, "o1", map[string]any{"action": "list"}); !strings.Contains(text, "no bash sessions") {
		t.Errorf("o1's list after Release = %q", text)
	}
	if text, _ := rcall(t, r, "o2", map[string]any{"action": "list"}); !strings.Contains(text, "b1") {
		t.Errorf("o2's list after o1's Release = %q", text)
	}
}

// TestRemoteReleaseAfterDrop: a controller that ends cleanly after a drop attaches again
// to release what its owner holds, so the daemon does not keep it for the grace period;
// another owner's next call hears that its session was kept.
func TestRemoteReleaseAfterDrop(t *testing.T) {
	r := newTestRemote(t, RemoteSpec{}, testRemoteOptions(t))
	text, isErr := rcall(t, r, "o1", map[string]any{"action": "start", "command": "echo pid=$$; exec sleep 1000"})
	_, after, ok := strings.Cut(text, "pid=")
	if isErr || !ok {
		t.Fatalf("start = %q", text)
	}
	session, _ := strconv.Atoi(strings.Fields(after)[0])
	if text, isErr := rcall(t, r, "o2", map[string]any{"action": "start", "command": "exec cat"}); isErr {
		t.Fatalf("start = %q", text)
	}
	r.mu.Lock()
	proxy := r.conn.cmd.Process.Pid
	r.mu.Unlock()
	syscall.Kill(proxy, syscall.SIGKILL)
	sshdtest.WaitFor(t, 5*time.Second, "the drop was not noticed", func() bool { return r.Status().State == StateDropped })
	if sshdtest.Gone(session) {
		t.Fatalf("the session ended with the connection")
	}
	r.Release(t.Context(), "o1")
	sshdtest.WaitFor(t, 5*time.Second, "the session outlived the release", func() bool { return sshdtest.Gone(session) })
	r.Release(t.Context(), "o3") // an owner that never used the host does not connect it
	if st := r.Status(); st.Attaches != 2 {
		t.Errorf("Status = %+v, want 2 attaches", st)
	}
	text, isErr = rcall(t, r, "o2", map[string]any{"action": "list"})
	if isErr || !strings.Contains(text, "re-established to the same host daemon") || !strings.Contains(text, "b1\trunning") {
		t.Errorf("o2's list after the drop = %q, want a notice and its session", text)
	}
}

// progressLog records what a progress reporter receives, and counts reports that come
// after the call returned.
type progressLog struct {
	mu       sync.Mutex // guards the fields below
	tails    []string
	returned bool
	late     int
}

func (l *progressLog) report(tail string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.returned {
		l.late++
	}
	l.tails = append(l.tails, tail)
}

// bashCaller is one way to make a remote bash exec call: through a [Remote] or a [Harness].
type bashCaller func(ctx context.Context, command string) (text string, isErr bool)

func remoteBash(r *Remote) bashCaller {
	return func(ctx context.Context, command string) (string, bool) {
		b, _ := json.Marshal(map[string]any{"command": command})
		res := r.Call(ctx, "o1", "bash", b)
		return res.Text, res.IsError
	}
}

// call makes a bash exec call under a ctx that carries l as its reporter.
func (l *progressLog) call(t *testing.T, bash bashCaller, command string) (string, bool) {
	t.Helper()
	text, isErr := bash(tools.WithProgress(t.Context(), l.report), command)
	l.mu.Lock()
	l.returned = true
	l.mu.Unlock()
	return text, isErr
}

// checkRemoteProgress: a reporter in the ctx of a remote call receives the call's output
// while it runs (the first line before the second is printed), and nothing after.
func checkRemoteProgress(t *testing.T, bash bashCaller) {
	t.Helper()
	var l progressLog
	text, isErr := l.call(t, bash, "echo first; sleep 0.6; echo second")
	if isErr || !strings.Contains(text, "first\nsecond\n") {
		t.Fatalf("call = %q", text)
	}
	// The relay's goroutine has ended; a report after Call returned would be a bug, not a race.
	l.mu.Lock()
	defer l.mu.Unlock()
	midRun := slices.ContainsFunc(l.tails, func(tail string) bool {
		return strings.Contains(tail, "first") && !strings.Contains(tail, "second")
	})
	if !midRun || l.late > 0 {
		t.Errorf("reported %q (%d after the call returned), want the first output while the call ran and nothing after", l.tails, l.late)
	}
}

func TestRemoteProgress(t *testing.T) {
	r := newTestRemote(t, RemoteSpec{}, testRemoteOptions(t))
	checkRemoteProgress(t, remoteBash(r))
}

// TestRemoteProgressStrayFrames: a host that sends progress for unknown ids, without an
// id, malformed, too long, and after the result does not disturb the call; only its one
// good progress frame is reported, cut to the newest ProgressBytes.
func TestRemoteProgressStrayFrames(t *testing.T) {
	long := "head" + strings.Repeat("x", tools.ProgressBytes)
	host := fmt.Sprintf(`echo '{"hello":{"protocol":%d,"version":"fake"}}'
read hello; read call
id=$(echo "$call" | sed 's/^{"id":\([0-9]*\),.*/\1/')
echo '{"id":99,"progress":{"tail":"unknown id"}}'
echo '{"progress":{"tail":"no id"}}'
echo "{\"id\":$id,\"progress\":{\"tail\":123}}"
echo "{\"id\":$id,\"progress\":{\"tail\":\"two payloads\"},\"pong\":{}}"
echo "{\"id\":$id,\"progress\":{\"tail\":\"%s\"}}"
echo "{\"id\":$id,\"result\":{\"text\":\"ok\"}}"
echo "{\"id\":$id,\"progress\":{\"tail\":\"after the result\"}}"`, proto.Version, long)
	r := newTestRemote(t, RemoteSpec{Command: []string{"sh", "-c", host}}, testRemoteOptions(t))
	var l progressLog
	if text, isErr := l.call(t, remoteBash(r), "true"); isErr || text != "ok" {
		t.Fatalf("call = %q, want ok", text)
	}
	if want := strings.Repeat("x", tools.ProgressBytes); !slices.Equal(l.tails, []string{want}) {
		t.Errorf("reported %d tails %.40q…, want only the good one, cut to %d bytes", len(l.tails), l.tails, tools.ProgressBytes)
	}
}

// TestSSHWithoutCredentials: the ssh processes a controller starts (the connection, the
// check) do not carry the credential variables, whose values another local process could
// read from /proc/PID/environ.
func TestSSHWithoutCredentials(t *testing.T) {
	t.Setenv("MYCO_TEST_KEY", "sk-leak")
	t.Setenv("MYCO_TEST_PLAIN", "kept")
	dump := filepath.Join(t.TempDir(), "env")
	o := testRemoteOptions(t)
	o.WithoutEnv = []string{"MYCO_TEST_KEY"}
	o.AttachTimeout = 5 * time.Second
	r := newTestRemote(t, RemoteSpec{Command: []string{"/bin/sh", "-c", "env > " + dump + "; exit 1"}}, o)
	r.Call(t.Context(), "o1", "bash", json.RawMessage(`{"command":"true"}`))
	env, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), "sk-leak") || !strings.Contains(string(env), "MYCO_TEST_PLAIN=kept") {
		t.Errorf("the ssh process's environment:\n%s\nwant it without MYCO_TEST_KEY", env)
	}
}
