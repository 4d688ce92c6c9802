// Package logging makes the process's one logger from --log-level and --log-format (else
// $MYCO_LOG_LEVEL and $MYCO_LOG_FORMAT, else each mode's default level, in text), on
// stderr or, for the terminal modes, in a file of the profile. cmd/myco builds the logger
// once and passes it down. It imports only the standard library.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

// Config is how the process logs.
type Config struct {
	level    slog.Level
	levelSet bool // a level was asked for; otherwise each mode has its own default
	json     bool
}

// Parse reads the log flags' values (empty when not given), then the variables through
// getenv. An unknown level or format is an error that names the flag or the variable.
func Parse(level, format string, getenv func(string) string) (Config, error) {
	var c Config
	levelFrom, formatFrom := "--log-level", "--log-format"
	if level == "" {
		level, levelFrom = getenv("MYCO_LOG_LEVEL"), "MYCO_LOG_LEVEL"
	}
	if format == "" {
		format, formatFrom = getenv("MYCO_LOG_FORMAT"), "MYCO_LOG_FORMAT"
	}
	if level != "" {
		if err := c.level.UnmarshalText([]byte(level)); err != nil {
			return c, fmt.Errorf("%s %q: want debug, info, warn or error", levelFrom, level)
		}
		c.levelSet = true
	}
	switch format {
	case "", "text":
	case "json":
		c.json = true
	default:
		return c, fmt.Errorf("%s %q: want text or json", formatFrom, format)
	}
	return c, nil
}

// JSON reports whether the log is JSON, one object a line: then nothing else may be
// written among its lines.
func (c Config) JSON() bool { return c.json }

// Logger returns a logger that writes to w at the level asked for, else at def.
func (c Config) Logger(w io.Writer, def slog.Level) *slog.Logger {
	o := &slog.HandlerOptions{Level: def}
	if c.levelSet {
		o.Level = c.level
	}
	if c.json {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// maxFile is the size past which a terminal mode's log file is started anew, the old one
// kept as FILE.1.
const maxFile = 4 << 20

// File returns the logger of a terminal mode: its lines go to path (in the profile), so
// that what the chat and myco -p print stays theirs, each line with the process's pid
// (several may share the file). It returns a close func. When the file cannot be opened,
// warn is told why, and warnings and errors go to stderr instead.
func (c Config) File(path string, stderr io.Writer, warn func(string)) (*slog.Logger, func()) {
	if st, err := os.Stat(path); err == nil && st.Size() > maxFile {
		os.Rename(path, path+".1")
	}
	fallback := func(err error) (*slog.Logger, func()) {
		warn(fmt.Sprintf("the log file %s cannot be opened, so warnings go to stderr: %s", path, err))
		return c.Logger(stderr, slog.LevelWarn), func() {}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fallback(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fallback(err)
	}
	return c.Logger(f, slog.LevelInfo).With("pid", os.Getpid()), func() { f.Close() }
}
