package needs

import (
	"fmt"
	"strings"
	"testing"
)

// recordingTB records how a need ended the test, instead of ending it.
type recordingTB struct {
	testing.TB
	failed, skipped string
}

func (r *recordingTB) Helper()                           {}
func (r *recordingTB) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }
func (r *recordingTB) Skip(args ...any)                  { r.skipped = fmt.Sprint(args...) }

// TestMissing: a missing need fails in CI and skips elsewhere, saying what is missing.
func TestMissing(t *testing.T) {
	for _, ci := range []string{"true", ""} {
		t.Setenv("CI", ci)
		r := &recordingTB{TB: t}
		Program(r, "no-such-program-here", "nowhere")
		got := r.skipped
		if ci != "" {
			got = r.failed
		}
		if !strings.Contains(got, "no-such-program-here is not installed (nowhere)") || (r.failed != "") != (ci != "") {
			t.Errorf("CI=%q: failed %q, skipped %q", ci, r.failed, r.skipped)
		}
	}
}
