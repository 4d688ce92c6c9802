package config

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// Snapshots configures the capture of a session's files around its tool batches, which
// the Changes view, undo and redo read (the [snapshots] table; see docs/changes.md). A
// zero number means its default; the file's values are checked to be positive.
type Snapshots struct {
	// Enabled turns the captures on; off, a turn's changes are neither shown nor undone.
	Enabled bool
	// MaxFileBytes is the size above which a file is recorded as changed but not stored.
	MaxFileBytes int64
	// MaxFiles bounds the entries one capture may list; a larger directory is not
	// captured, and its turns say so.
	MaxFiles int
	// KeepTurns is how many of a session's last turns keep their snapshots; older ones are
	// pruned.
	KeepTurns int
}

// The defaults of [Snapshots].
const (
	DefaultSnapshotMaxFileBytes = 2 << 20
	DefaultSnapshotMaxFiles     = 100_000
	DefaultSnapshotKeepTurns    = 100
)

func defaultSnapshots() Snapshots {
	return Snapshots{Enabled: true, MaxFileBytes: DefaultSnapshotMaxFileBytes, MaxFiles: DefaultSnapshotMaxFiles, KeepTurns: DefaultSnapshotKeepTurns}
}

type rawSnapshots struct {
	Enabled      *bool  `toml:"enabled"`
	MaxFileBytes *int64 `toml:"max_file_bytes"`
	MaxFiles     *int   `toml:"max_files"`
	KeepTurns    *int   `toml:"keep_turns"`
}

// snapshots decodes the [snapshots] table into c.
func (d *decoder) snapshots(p toml.Primitive, c *Config) {
	if typ := d.md.Type("snapshots"); typ != "" && typ != "Hash" {
		d.errs = append(d.errs, d.errorAt([]string{"snapshots"}, "must be a table, not "+typeName(strings.ToLower(typ))))
		d.broken["snapshots"] = true
		return
	}
	var raw rawSnapshots
	if !d.value(p, &raw, "snapshots") {
		return
	}
	s := &c.Snapshots
	if raw.Enabled != nil {
		s.Enabled = *raw.Enabled
	}
	positive := func(key string, n int64) bool {
		if n <= 0 {
			d.errs = append(d.errs, d.errorAt([]string{"snapshots", key}, fmt.Sprintf("must be a positive integer, got %d", n)))
			return false
		}
		return true
	}
	if raw.MaxFileBytes != nil && positive("max_file_bytes", *raw.MaxFileBytes) {
		s.MaxFileBytes = *raw.MaxFileBytes
	}
	if raw.MaxFiles != nil && positive("max_files", int64(*raw.MaxFiles)) {
		s.MaxFiles = *raw.MaxFiles
	}
	if raw.KeepTurns != nil && positive("keep_turns", int64(*raw.KeepTurns)) {
		s.KeepTurns = *raw.KeepTurns
	}
}
