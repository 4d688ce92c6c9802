//go:build linux

package procstat

import (
	"os"
	"testing"
)

func TestKiB(t *testing.T) {
	rss, self := KiB(os.Getpid(), "VmRSS"), KiB(0, "VmHWM")
	if rss <= 0 || self < rss {
		t.Errorf("VmRSS %d KiB, VmHWM %d KiB: want a resident size, and a peak at least as big", rss, self)
	}
	if n := KiB(0, "NoSuchField"); n != 0 {
		t.Errorf("a missing field reads %d, want 0", n)
	}
}
