package logging

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	for _, tt := range []struct {
		name, level, format, envLevel, envFormat string
		err                                      string
		logsDebug, json                          bool
	}{
		{name: "defaults"},
		{name: "flag level", level: "debug", logsDebug: true},
		{name: "env level", envLevel: "debug", logsDebug: true},
		{name: "flag beats env", level: "info", envLevel: "debug"},
		{name: "json from env", envFormat: "json", json: true},
		{name: "bad flag level", level: "loud", err: `--log-level "loud": want debug, info, warn or error`},
		{name: "bad env format", envFormat: "yaml", err: `MYCO_LOG_FORMAT "yaml": want text or json`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env["MYCO_LOG_LEVEL"], env["MYCO_LOG_FORMAT"] = tt.envLevel, tt.envFormat
			c, err := Parse(tt.level, tt.format, getenv)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Parse(%q, %q) = %v, want %q", tt.level, tt.format, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			c.Logger(&b, slog.LevelInfo).Debug("hidden unless debug")
			if got := b.Len() > 0; got != tt.logsDebug {
				t.Errorf("a debug line logged = %v, want %v", got, tt.logsDebug)
			}
			b.Reset()
			c.Logger(&b, slog.LevelInfo).Info("x")
			if got := strings.HasPrefix(b.String(), "{"); got != tt.json {
				t.Errorf("line %q: JSON = %v, want %v", b.String(), got, tt.json)
			}
		})
	}
}

// TestFileFallback: a log file that cannot be opened says so once, and warnings go to
// stderr instead.
func TestFileFallback(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	var warned []string
	log, closeLog := Config{}.File(filepath.Join(blocker, "myco.log"), &stderr, func(s string) { warned = append(warned, s) })
	defer closeLog()
	log.Info("not shown")
	log.Warn("shown")
	if len(warned) != 1 || !strings.Contains(warned[0], "cannot be opened") {
		t.Errorf("warnings = %q, want one about the file", warned)
	}
	if got := stderr.String(); strings.Contains(got, "not shown") || !strings.Contains(got, "shown") {
		t.Errorf("stderr = %q, want the warning only", got)
	}
}
