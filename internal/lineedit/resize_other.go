//go:build !unix

package lineedit

import "os"

// resizeSignals are the signals that say the terminal's size changed: none here.
var resizeSignals []os.Signal
