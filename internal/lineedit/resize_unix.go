//go:build unix

package lineedit

import (
	"os"
	"syscall"
)

// resizeSignals are the signals that say the terminal's size changed.
var resizeSignals = []os.Signal{syscall.SIGWINCH}
