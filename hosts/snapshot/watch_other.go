//go:build !linux

package snapshot

import (
	"errors"
	"os"
)

// No notifier outside Linux: every capture walks the whole tree.
func newNotifier() (notifier, error) {
	return nil, errors.New("snapshot: no change notification on this system")
}

func maxWatches() int { return 0 }

func watchable(*os.File) bool { return false }
