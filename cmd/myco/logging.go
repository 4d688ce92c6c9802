package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

// logging is how the process logs: --log-level and --log-format, else $MYCO_LOG_LEVEL and
// $MYCO_LOG_FORMAT, else each mode's default level, in text.
type logging struct {
	level    slog.Level
	levelSet bool // a level was asked for; otherwise each mode has its own default
	json     bool
}

// logging reads the log flags of o, then the environment.
func (a *app) logging(o options) (logging, error) {
	var l logging
	level, format := o.logLevel, o.logFormat
	levelFrom, formatFrom := "--log-level", "--log-format"
	if level == "" {
		level, levelFrom = a.getenv("MYCO_LOG_LEVEL"), "MYCO_LOG_LEVEL"
	}
	if format == "" {
		format, formatFrom = a.getenv("MYCO_LOG_FORMAT"), "MYCO_LOG_FORMAT"
	}
	if level != "" {
		if err := l.level.UnmarshalText([]byte(level)); err != nil {
			return l, fmt.Errorf("%s %q: want debug, info, warn or error", levelFrom, level)
		}
		l.levelSet = true
	}
	switch format {
	case "", "text":
	case "json":
		l.json = true
	default:
		return l, fmt.Errorf("%s %q: want text or json", formatFrom, format)
	}
	return l, nil
}

// logger returns a logger that writes to w at the level asked for, else at def.
func (l logging) logger(w io.Writer, def slog.Level) *slog.Logger {
	o := &slog.HandlerOptions{Level: def}
	if l.levelSet {
		o.Level = l.level
	}
	if l.json {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// logArgs are the log flags given on o's command line, for the processes this one starts
// (a profile's worker, the host daemon); the environment reaches them anyway.
func logArgs(o options) []string {
	var args []string
	if o.logLevel != "" {
		args = append(args, "--log-level", o.logLevel)
	}
	if o.logFormat != "" {
		args = append(args, "--log-format", o.logFormat)
	}
	return args
}

// maxLogFile is the size past which a terminal mode's log file is started anew, the old
// one kept as FILE.1.
const maxLogFile = 4 << 20

// fileLogger returns the logger of a terminal mode: its lines go to path (in the profile),
// so that what the chat and myco -p print stays theirs, each line with the process's pid
// (several may share the file). It returns a close func. When the file cannot be opened,
// warnings and errors go to stderr instead.
func (a *app) fileLogger(path string) (*slog.Logger, func()) {
	if st, err := os.Stat(path); err == nil && st.Size() > maxLogFile {
		os.Rename(path, path+".1")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return a.logFallback(path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return a.logFallback(path, err)
	}
	return a.logs.logger(f, slog.LevelInfo).With("pid", os.Getpid()), func() { f.Close() }
}

func (a *app) logFallback(path string, err error) (*slog.Logger, func()) {
	a.warn(fmt.Sprintf("the log file %s cannot be opened, so warnings go to stderr: %s", path, err))
	return a.logs.logger(a.stderr, slog.LevelWarn), func() {}
}
