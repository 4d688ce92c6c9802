package cli

import (
	"bytes"
	"strings"
	"testing"
	"testing/fstest"
)

func TestHelp(t *testing.T) {
	manual := fstest.MapFS{
		"cli.md":           {Data: []byte("# the chat\n")},
		"configuration.md": {Data: []byte("# config\n")},
	}
	for _, tt := range []struct {
		name         string
		args         []string
		code         int
		stdout, errs string
	}{
		{"usage", nil, ExitOK, "USAGE\nHelp topics (myco --help TOPIC prints the manual's page; every profile has them in manual/):\n  api cli config configuration prelude server sessions\n\nFlags:\nFLAGS", ""},
		{"page", []string{"cli"}, ExitOK, "# the chat\n", ""},
		{"alias", []string{"config"}, ExitOK, "# config\n", ""},
		{"unknown", []string{"../x"}, ExitUsage, "", `myco: no help topic "../x"; the topics are: api, cli,`},
		{"two", []string{"a", "b"}, ExitUsage, "", "at most"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Help(IO{Stdout: &stdout, Stderr: &stderr}, tt.args, manual, "USAGE\n", "FLAGS")
			if code != tt.code || stdout.String() != tt.stdout || !strings.Contains(stderr.String(), tt.errs) {
				t.Errorf("Help(%q) = %d, %q, %q; want %d, %q, %q", tt.args, code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.errs)
			}
		})
	}
}
