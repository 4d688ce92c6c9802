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

	"myco/hosts/proto"
)

// TestRemoteCallAfterHostOutputEnded: the host's output ends, and the controller closes
// its stdin, then spends up to two seconds reaping it (here it lingers; a ControlPersist
// ssh keeping stderr open does the same). A call made then was never sent: it runs on a
// fresh connection, and was once reported as of unknown outcome, or as a write error. An
// inventory query then says the connection ended.
func TestRemoteCallAfterHostOutputEnded(t *testing.T) {
	dir := daemonDir(t)
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
	waitFor(t, 5*time.Second, "the controller did not close the host's stdin", func() bool {
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
