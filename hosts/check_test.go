package hosts

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/hosts/proto"
)

// TestCheckFiltersRemoteStrings: what `myco hosts check` reports from the remote (the
// path and version of its myco, its hello, ssh's stderr) has its control characters
// written out, and the commands it suggests quote the alias; a host without its daemon
// gets a warning.
func TestCheckFiltersRemoteStrings(t *testing.T) {
	home := t.TempDir()
	// A myco stand-in whose very name carries a control sequence.
	fake := filepath.Join(t.TempDir(), "my\x1b[1mco")
	writeFile(t, fake, fmt.Sprintf(`#!/bin/sh
if [ "$1" = --version ]; then printf 'myco \033[31mred\n'; exit 0; fi
echo '{"hello":{"protocol":%d,"version":"\u001b[2J","dir":"/h\u001b]52;c;eA==\u0007","no_daemon":"a\u001b[1mreason"}}'
exec cat >/dev/null
`, proto.Version))
	if err := os.Chmod(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	o := testRemoteOptions(t)
	o.SSH = shellSSH(t, home, "/usr/bin:/bin")
	ok := NewRemote(RemoteSpec{Alias: "devbox", Command: []string{fake}}, o)
	defer ok.Close()
	res := ok.Check(t.Context())
	all := strings.Join(append([]string{res.Check, res.Path, res.Version, res.Hello.Version, res.Hello.Dir, res.Hello.NoDaemon}, append(res.Problems, res.Warnings...)...), "\n")
	if len(res.Problems) != 0 || !strings.HasSuffix(res.Path, `my\x1b[1mco`) || res.Version != `myco \x1b[31mred` || res.Hello.Version != `\x1b[2J` {
		t.Errorf("Check = %+v, want no problems and the remote's strings written out", res)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `no host daemon (a\x1b[1mreason)`) {
		t.Errorf("Check warnings = %q, want the no-daemon warning", res.Warnings)
	}
	if strings.ContainsAny(all, "\x1b\x07") {
		t.Errorf("Check result holds raw control characters:\n%q", all)
	}

	bad := NewRemote(RemoteSpec{Alias: "dev;box$(x)"}, o)
	defer bad.Close()
	res = bad.Check(t.Context())
	all = strings.Join(append([]string{res.Check}, res.Problems...), "\n")
	for _, want := range []string{"ssh -o BatchMode=yes 'dev;box$(x)' 'command -v myco; myco --version'", "`ssh -o BatchMode=yes 'dev;box$(x)' true`", "`ssh 'dev;box$(x)'`", `\x1b]0;pwned\aCould not resolve hostname dev;box$(x)`} {
		if !strings.Contains(all, want) {
			t.Errorf("Check of an unreachable host = %q, lacks %q", all, want)
		}
	}
	if strings.ContainsAny(all, "\x1b\x07") {
		t.Errorf("Check result holds raw control characters:\n%q", all)
	}
}

// TestCheckNotOnPathQuotes: the install suggestion quotes the alias.
func TestCheckNotOnPathQuotes(t *testing.T) {
	o := testRemoteOptions(t)
	o.SSH = shellSSH(t, t.TempDir(), "/usr/bin:/bin")
	r := NewRemote(RemoteSpec{Alias: "devbox", Command: []string{"/nonexistent/myco"}}, o)
	defer r.Close()
	res := r.Check(t.Context())
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0], "Run `myco hosts install devbox`") || !strings.Contains(res.Problems[0], "`ssh devbox 'echo $PATH'`") {
		t.Errorf("Check = %+v, want the not-on-PATH problem", res)
	}
}
