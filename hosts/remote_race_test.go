package hosts

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"myco.dev/hosts/proto"
	"myco.dev/hosts/tools"
	"myco.dev/internal/sshdtest"
)

// TestRemoteCallAfterHostOutputEnded: the host's output ends, and the controller closes
// its stdin, then spends up to two seconds reaping it (here it lingers; a ControlPersist
// ssh keeping stderr open does the same). A call made then was never sent: it runs on a
// fresh connection, and was once reported as of unknown outcome, or as a write error. An
// inventory query then says the connection ended.
func TestRemoteCallAfterHostOutputEnded(t *testing.T) {
	dir := sshdtest.NewDaemonDir(t)
	closed := filepath.Join(dir, "stdin-closed")
	// The first host process closes its stdout after the hellos, notes when its stdin
	// closes, and lingers; the next ones are real hosts.
	host := fmt.Sprintf(`if [ -e %[1]s ]; then exec %[2]s --host-dir %[3]s "$@"; fi
echo '{"hello":{"protocol":%[4]d,"version":"v"}}'
read line
exec >&-
cat >/dev/null
touch %[1]s
exec sleep 5`, closed, mycoBin, dir, proto.Version)
	r := newTestRemote(t, RemoteSpec{Command: []string{"sh", "-c", host, "sh"}}, testRemoteOptions(t))
	if _, err := r.Attach(t.Context()); err != nil {
		t.Fatal(err)
	}
	sshdtest.WaitFor(t, 5*time.Second, "the controller did not close the host's stdin", func() bool {
		_, err := os.Stat(closed)
		return err == nil
	})
	if inv := r.Inventory(t.Context(), "o1"); !inv.LastKnown || !strings.Contains(inv.Err, "ended") {
		t.Errorf("inventory after the host's output ended = %+v, want last-known data and why", inv)
	}
	b, _ := json.Marshal(map[string]any{"command": "echo ran"})
	res := r.Call(t.Context(), "o1", "bash", b)
	if res.Unknown || res.IsError || !strings.Contains(res.Text, "ran\n") || strings.Contains(res.Text, "[myco:") {
		t.Errorf("call after the host's output ended = %+v, want it run on a fresh connection", res)
	}
	if st := r.Status(); st.State != StateAttached || st.Attaches != 2 {
		t.Errorf("Status = %+v, want attached a second time", st)
	}
}

type shortWriter struct{ n int }

func (w shortWriter) Write(p []byte) (int, error) { return min(w.n, len(p)), os.ErrClosed }

// TestCutWriter: a failed write to the host says whether part of the frame went out, since
// a request whose frame went out in part may have run, and one with none did not.
func TestCutWriter(t *testing.T) {
	for _, n := range []int{0, 1, 9} {
		_, err := cutWriter{shortWriter{n}}.Write([]byte("0123456789"))
		if got, want := errors.Is(err, errCut), n > 0; got != want || !errors.Is(err, os.ErrClosed) {
			t.Errorf("write cut after %d bytes: err = %v, want errCut %v and the write's error", n, err, want)
		}
	}
}

// TestRemoteNoteAfterDrop: the host answers a bash start and its connection ends before
// the answer is noted, so the drop found no session to tell about. The owner's next call
// still hears that the session is gone, once; it once heard nothing.
func TestRemoteNoteAfterDrop(t *testing.T) {
	dir := sshdtest.NewDaemonDir(t)
	first := filepath.Join(dir, "first")
	host := fmt.Sprintf(`if [ -e %[1]s ]; then exec %[2]s --host-dir %[3]s "$@"; fi
touch %[1]s
echo '{"hello":{"protocol":%[4]d,"version":"v","instance":"gone"}}'
exec cat >/dev/null`, first, mycoBin, dir, proto.Version)
	r := newTestRemote(t, RemoteSpec{Command: []string{"sh", "-c", host, "sh"}}, testRemoteOptions(t))
	c, _, err := r.attach(t.Context(), "o1")
	if err != nil {
		t.Fatal(err)
	}
	c.close(errors.New("test drop"), 5*time.Second)
	if st := r.Status(); st.State != StateDropped {
		t.Fatalf("Status after the drop = %+v, want dropped", st)
	}
	start, _ := json.Marshal(map[string]any{"action": "start", "command": "cat"})
	if res := r.answer(c, &proto.Call{Owner: "o1", Tool: "bash", Input: start}, proto.Msg{Result: &tools.Result{Text: "session_id: b7\n"}}); res.IsError {
		t.Fatalf("answer = %+v", res)
	}
	text, isErr := rcall(t, r, "o1", map[string]any{"command": "echo ran"})
	if isErr || !strings.Contains(text, "bash sessions b7 started there are gone") || !strings.Contains(text, "test drop") {
		t.Errorf("next call = %q, want a notice that b7 is gone", text)
	}
	if text, isErr = rcall(t, r, "o1", map[string]any{"command": "echo again"}); isErr || strings.Contains(text, "[myco:") {
		t.Errorf("second call = %q, want a plain answer", text)
	}
}

// TestRemoteCloseDuringAttach: Close ends an attach in progress at once (here one with no
// bound that waits for a hello that never comes), which fails saying the controller is
// closed and reports no state after Close returned. Close once waited for the host to end
// by itself, then saw the attach report an error. The loop closes at every point of an
// attach, before its process starts or later, of hosts that say hello or not; each attach
// ends, and OnState hears nothing after Close returned.
func TestRemoteCloseDuringAttach(t *testing.T) {
	dir := t.TempDir()
	hello := fmt.Sprintf(`echo '{"hello":{"protocol":%d,"version":"v"}}'; exec cat >/dev/null`, proto.Version)
	for i := range 20 {
		started := filepath.Join(dir, fmt.Sprint(i))
		host := "touch " + started + "; exec sleep 60"
		if i%2 == 1 {
			host = hello
		}
		o := testRemoteOptions(t)
		o.AttachTimeout = 0
		var states stateLog
		o.OnState = states.add
		r := NewRemote(RemoteSpec{Alias: "devbox", Command: []string{"sh", "-c", host}}, o)
		attached := make(chan error, 1)
		go func() {
			_, err := r.Attach(t.Context())
			attached <- err
		}()
		if i == 0 {
			sshdtest.WaitFor(t, 5*time.Second, "the host did not start", func() bool {
				_, err := os.Stat(started)
				return err == nil
			})
		}
		closed := make(chan string)
		go func() {
			r.Close()
			closed <- states.String()
		}()
		var atClose string
		select {
		case atClose = <-closed:
		case <-time.After(20 * time.Second):
			t.Fatalf("try %d: Close still waits for the attach in progress", i)
		}
		select {
		case err := <-attached:
			silent := i%2 == 0
			if (err != nil || silent) && (err == nil || !strings.Contains(err.Error(), "the controller is closed")) {
				t.Errorf("try %d: attach ended by Close = %v, want an error that says so", i, err)
			}
			if silent && atClose != "" {
				t.Errorf("try %d: OnState saw %q, want nothing", i, atClose)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("try %d: the attach goes on after Close returned", i)
		}
		if got := states.String(); got != atClose {
			t.Errorf("try %d: OnState saw %q after Close returned, having seen %q before", i, got, atClose)
		}
		if st := r.Status(); st.State != StateLazy {
			t.Errorf("try %d: Status after Close = %+v, want lazy", i, st)
		}
	}
}

// TestRemotePingWhileReaped: pings are not sent to a host whose output ended while it is
// reaped, so they do not count as missed: the drop gives the host's own end as its reason,
// not unanswered pings.
func TestRemotePingWhileReaped(t *testing.T) {
	host := fmt.Sprintf(`echo '{"hello":{"protocol":%d,"version":"v"}}'; read line; exec >&-; cat >/dev/null; exec sleep 5`, proto.Version)
	o := testRemoteOptions(t)
	o.PingInterval, o.PingMisses = 100*time.Millisecond, 1
	r := newTestRemote(t, RemoteSpec{Command: []string{"sh", "-c", host}}, o)
	if _, err := r.Attach(t.Context()); err != nil {
		t.Fatal(err)
	}
	sshdtest.WaitFor(t, 10*time.Second, "the host was not dropped", func() bool { return r.Status().State == StateDropped })
	if st := r.Status(); strings.Contains(st.Err, "ping") || !strings.Contains(st.Err, "killed") {
		t.Errorf("Status.Err = %q, want the host's end (killed after its output ended)", st.Err)
	}
}
