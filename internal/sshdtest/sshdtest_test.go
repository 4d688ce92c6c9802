package sshdtest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRemoteHome: a command over the real ssh to devbox runs with the temporary HOME,
// its bin directory first on PATH and the fixture's TMPDIR; refused refuses.
func TestRemoteHome(t *testing.T) {
	s := Start(t)
	out, err := exec.Command("ssh", "-F", s.Config, "devbox", "echo $HOME; echo $PATH; echo $TMPDIR").CombinedOutput()
	if err != nil {
		t.Fatalf("ssh devbox: %v %s", err, out)
	}
	if want := s.Home + "\n" + s.Home + "/.local/bin:"; !strings.HasPrefix(string(out), want) {
		t.Errorf("remote HOME and PATH = %q, want the temporary home first", out)
	}
	if !strings.HasSuffix(string(out), "\n"+s.TmpDir+"\n") {
		t.Errorf("remote TMPDIR in %q, want %s", out, s.TmpDir)
	}
	if out, err := exec.Command("ssh", "-F", s.Config, "-o", "BatchMode=yes", "refused", "true").CombinedOutput(); err == nil || !strings.Contains(string(out), "Connection refused") {
		t.Errorf("ssh refused = %v %q, want a refused connection", err, out)
	}
}
