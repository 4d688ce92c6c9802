// Package procstat reads a process's memory figures from /proc, for the benchmarks and
// load tests that report them.
package procstat

import (
	"os"
	"strconv"
	"strings"
)

// KiB returns field ("VmRSS", "VmHWM", ...) of /proc/PID/status in KiB, pid 0 meaning this
// process; 0 where there is no such file or field (not Linux, the process gone).
func KiB(pid int, field string) int64 {
	who := "self"
	if pid != 0 {
		who = strconv.Itoa(pid)
	}
	b, err := os.ReadFile("/proc/" + who + "/status")
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}
