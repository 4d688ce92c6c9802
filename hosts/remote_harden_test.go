package hosts

import (
	"encoding/json"
	"fmt"
	"myco.dev/internal/shquote"
	"strings"
	"testing"
	"time"

	"myco.dev/hosts/proto"
	"myco.dev/internal/sshdtest"
)

// TestRemoteCallTooLarge: a call over proto.MaxRequestLine is refused by the controller
// with a tool error that says how to split it; nothing reaches the host, and the
// connection serves the next call.
func TestRemoteCallTooLarge(t *testing.T) {
	r := newTestRemote(t, RemoteSpec{}, testRemoteOptions(t))
	if text, isErr := rcall(t, r, "o1", map[string]any{"command": "echo before"}); isErr {
		t.Fatal(text)
	}
	path := t.TempDir() + "/big.txt"
	in, _ := json.Marshal(map[string]any{"command": "create", "path": path, "file_text": strings.Repeat("x", proto.MaxRequestLine)})
	res := r.Call(t.Context(), "o1", "str_replace_based_edit_tool", in)
	for _, want := range []string{"host devbox: this str_replace_based_edit_tool call was not sent", "at most 2 MiB", "Split the work"} {
		if !res.IsError || !strings.Contains(res.Text, want) {
			t.Errorf("a call over the limit = %+v, lacks %q", res, want)
		}
	}
	if text, isErr := rcall(t, r, "o1", map[string]any{"command": "echo after"}); isErr || !strings.Contains(text, "after") {
		t.Errorf("the next call = %q", text)
	}
	if st := r.Status(); st.State != StateAttached || st.Attaches != 1 {
		t.Errorf("Status = %+v, want the first connection still attached", st)
	}
}

// TestRemoteWithoutEnv: the variables RemoteOptions.WithoutEnv names reach neither an exec
// call's process nor a bash session on the host (the real binary, through its daemon and
// in-process), while the host's other variables do; another controller's connection to
// the same daemon, which names none, sees them, and one whose names SetWithoutEnv set
// before it connected does not. The host's environment is its own (here set by the remote
// command, as a remote's login would), not the controller's.
func TestRemoteWithoutEnv(t *testing.T) {
	for _, tt := range []struct {
		name  string
		extra []string
	}{
		{"daemon", nil},
		{"in-process", []string{"--no-daemon"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := sshdtest.NewDaemonDir(t)
			spec := RemoteSpec{Command: append([]string{"env", "MYCO_TEST_SECRET=s3cret", "MYCO_TEST_PLAIN=plain", mycoBin, "--host-dir", dir}, tt.extra...)}
			o := testRemoteOptions(t)
			o.WithoutEnv = []string{"MYCO_TEST_SECRET", "OTHER_KEY"}
			r := newTestRemote(t, spec, o)
			const show = `echo "[$MYCO_TEST_SECRET][$MYCO_TEST_PLAIN]"`
			if text, _ := rcall(t, r, "o1", map[string]any{"command": show}); !strings.Contains(text, "[][plain]") {
				t.Errorf("exec under WithoutEnv printed %q, want [][plain]", text)
			}
			if text, _ := rcall(t, r, "o1", map[string]any{"action": "start", "command": show + "; exec cat"}); !strings.Contains(text, "[][plain]") {
				t.Errorf("a session under WithoutEnv printed %q, want [][plain]", text)
			}
			other := newTestRemote(t, spec, testRemoteOptions(t))
			if text, _ := rcall(t, other, "o2", map[string]any{"command": show}); !strings.Contains(text, "[s3cret][plain]") {
				t.Errorf("exec on a connection without WithoutEnv printed %q, want [s3cret][plain]", text)
			}
			// A changed config's names (issue 28): SetWithoutEnv before the connection is made.
			later := newTestRemote(t, spec, testRemoteOptions(t))
			later.SetWithoutEnv([]string{"MYCO_TEST_SECRET"})
			if text, _ := rcall(t, later, "o3", map[string]any{"command": show}); !strings.Contains(text, "[][plain]") {
				t.Errorf("exec after SetWithoutEnv printed %q, want [][plain]", text)
			}
		})
	}
}

// TestRemoteNoDaemonWarning: a host that serves without its daemon says so in its hello,
// and the remote's status carries a plain warning; through the daemon there is none.
func TestRemoteNoDaemonWarning(t *testing.T) {
	for _, tt := range []struct {
		name  string
		extra []string
		warn  bool
	}{
		{"daemon", nil, false},
		{"in-process", []string{"--no-daemon"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := testRemoteOptions(t)
			var warnings []string
			o.OnState = func(st Status) { warnings = append(warnings, st.Warning) }
			r := newTestRemote(t, RemoteSpec{Command: append([]string{mycoBin, "--host-dir", sshdtest.NewDaemonDir(t)}, tt.extra...)}, o)
			if _, err := r.Attach(t.Context()); err != nil {
				t.Fatal(err)
			}
			st := r.Status()
			got := strings.Contains(st.Warning, "no host daemon") && strings.Contains(st.Warning, "end when the ssh connection drops")
			if got != tt.warn || (!tt.warn && st.Warning != "") || len(warnings) != 1 || warnings[0] != st.Warning {
				t.Errorf("Status = %+v (OnState saw warnings %q), want a no-daemon warning: %v", st, warnings, tt.warn)
			}
		})
	}
}

// TestRemoteHostStringsFiltered: what a host says that reaches a terminal (its hello, an
// error before it, a fatal error after it) has its control characters written out.
func TestRemoteHostStringsFiltered(t *testing.T) {
	const esc = `\u001b]0;pwned\u0007`
	for _, tt := range []struct {
		name, host string
		check      func(st Status) string // the filtered string
	}{
		{"hello", fmt.Sprintf(`echo '{"hello":{"protocol":%d,"version":"%s","os":"%s","dir":"%s","no_daemon":"%s"}}'; while read -r l; do :; done`, proto.Version, esc, esc, esc, esc),
			func(st Status) string {
				return st.Hello.Version + st.Hello.OS + st.Hello.Dir + st.Hello.NoDaemon + st.Warning
			}},
		{"error before the hello", `echo '{"error":{"message":"refused` + esc + `","fatal":true}}'`,
			func(st Status) string { return st.Err }},
		{"fatal after the hello", fmt.Sprintf(`echo '{"hello":{"protocol":%d,"version":"v"}}'; read hello; echo '{"error":{"message":"bye%s","fatal":true}}'`, proto.Version, esc),
			func(st Status) string { return st.Err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRemote(t, RemoteSpec{Command: []string{"sh", "-c", tt.host}}, testRemoteOptions(t))
			r.Attach(t.Context())
			sshdtest.WaitFor(t, 5*time.Second, "the host did not end", func() bool { return tt.name != "fatal after the hello" || r.Status().State == StateDropped })
			st := r.Status()
			got := tt.check(st)
			if strings.ContainsAny(got, "\x1b\x07") || !strings.Contains(got, `\x1b]0;pwned\x07`) {
				t.Errorf("Status = %+v: %q, want the control characters written out", st, got)
			}
			if tt.name == "fatal after the hello" && !strings.Contains(st.Err, "the host ended the connection: bye") {
				t.Errorf("Status.Err = %q, want the host's fatal message", st.Err)
			}
		})
	}
}

// TestCheckCommandQuoting: the check command quotes the alias, the config file and the
// remote command for a POSIX shell.
func TestCheckCommandQuoting(t *testing.T) {
	for _, tt := range []struct {
		spec RemoteSpec
		want string
	}{
		{RemoteSpec{Alias: "devbox"}, `ssh -o BatchMode=yes devbox 'command -v myco; myco --version'`},
		{RemoteSpec{Alias: "a;touch${IFS}x", ConfigFile: "/tmp/my config"}, `ssh -o BatchMode=yes -F '/tmp/my config' 'a;touch${IFS}x' 'command -v myco; myco --version'`},
		{RemoteSpec{Alias: "it's", Command: []string{"~/.local/bin/myco"}}, `ssh -o BatchMode=yes 'it'\''s' 'command -v ~/.local/bin/myco; ~/.local/bin/myco --version'`},
		{RemoteSpec{Alias: "d", Command: []string{"/opt/my co/myco", "--host-dir", "/tmp/$x"}}, `ssh -o BatchMode=yes d 'command -v '\''/opt/my co/myco'\''; '\''/opt/my co/myco'\'' --host-dir '\''/tmp/$x'\'' --version'`},
	} {
		r := NewRemote(tt.spec, RemoteOptions{MaxImageBase64Bytes: 1})
		if got := r.CheckCommand(); got != tt.want {
			t.Errorf("CheckCommand(%+v) =\n%s\nwant\n%s", tt.spec, got, tt.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"devbox", "devbox"},
		{"user@host.example:22", "user@host.example:22"},
		{"", "''"},
		{"a b", "'a b'"},
		{"$(rm -rf ~)", "'$(rm -rf ~)'"},
		{"it's", `'it'\''s'`},
		{"~/.local/bin/myco", "~/.local/bin/myco"},
		{"~/my dir/x", "~/'my dir/x'"},
		{"~", "'~'"},
		{"a\x1bb", "'a\x1bb'"},
	} {
		if got := shquote.Path(tt.in); got != tt.want {
			t.Errorf("shquote.Path(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRemoteHostEndsRightAfterHello: a host that ends at once after its hello (here with a
// fatal frame sent before it even reads the controller's hello) is recorded as dropped, with
// its reason, whether it ended before or after the attach took the connection; it once
// stayed "attached" to a dead connection when it ended first.
func TestRemoteHostEndsRightAfterHello(t *testing.T) {
	for range 10 {
		host := fmt.Sprintf(`echo '{"hello":{"protocol":%d,"version":"v"}}'; echo '{"error":{"message":"gone","fatal":true}}'`, proto.Version)
		r := newTestRemote(t, RemoteSpec{Command: []string{"sh", "-c", host}}, testRemoteOptions(t))
		r.Attach(t.Context())
		sshdtest.WaitFor(t, 5*time.Second, "the host was not dropped", func() bool { return r.Status().State == StateDropped })
		if st := r.Status(); !strings.Contains(st.Err, "the host ended the connection: gone") {
			t.Fatalf("Status.Err = %q, want the host's fatal message", st.Err)
		}
	}
}
