package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"myco.dev/internal/needs"
)

// fakeEnv is a process environment.
type fakeEnv map[string]string

func (e fakeEnv) lookup(k string) (string, bool) { v, ok := e[k]; return v, ok }

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// credConfig is a config whose gateways read their credentials from names.
func credConfig(names ...string) *Config {
	c := defaults("config.toml")
	for i, n := range names {
		c.Gateways[fmt.Sprint("g", i)] = Gateway{Auth: Auth{Source: AuthEnv, VarName: n}}
	}
	return c
}

func TestLoadDotEnv(t *testing.T) {
	for _, tt := range []struct {
		name    string
		src     string
		process fakeEnv
		want    fakeEnv // what Lookup reports for A, B and C
		wantErr string  // after "FILE:"; empty means success
	}{
		{name: "plain", src: "A=1\nB = two words \n", want: fakeEnv{"A": "1", "B": "two words"}},
		{name: "export, comments, blanks", src: "# c\n\nexport A=1\n  # indented\r\nB=2\r\n", want: fakeEnv{"A": "1", "B": "2"}},
		{name: "inline comment", src: "A=x # note\nB=a#b\n", want: fakeEnv{"A": "x", "B": "a#b"}},
		{name: "single quotes are literal", src: `A='a\nb # c' # note` + "\n", want: fakeEnv{"A": `a\nb # c`}},
		{name: "double quotes escape", src: `A="line1\nline2\t\"q\" \\ \$"` + "\n", want: fakeEnv{"A": "line1\nline2\t\"q\" \\ $"}},
		{name: "empty values", src: "A=\nB=''\nC=\"\"\n", want: fakeEnv{"A": "", "B": "", "C": ""}},
		{name: "equals in value", src: "A=b=c\n", want: fakeEnv{"A": "b=c"}},
		{name: "the environment wins", src: "A=new\nB=new\nC=new\n", process: fakeEnv{"A": "old", "B": ""}, want: fakeEnv{"A": "old", "B": "", "C": "new"}},
		{name: "first definition wins", src: "A=1\nA=2\n", want: fakeEnv{"A": "1"}},
		{name: "no equals", src: "A=1\nnonsense\n", wantErr: "2: want KEY=VALUE"},
		{name: "bad name", src: "\n1A=x\n", wantErr: `2: invalid variable name "1A"`},
		{name: "dash in name", src: "A-B=x\n", wantErr: `1: invalid variable name "A-B"`},
		{name: "unterminated double", src: "A=\"abc\n", wantErr: "1: A: unterminated double-quoted value"},
		{name: "unterminated single", src: "A='abc\n", wantErr: "1: A: unterminated single-quoted value"},
		{name: "junk after quote", src: "A=\"a\" b\n", wantErr: `1: A: unexpected text after the closing quote: "b"`},
		{name: "unknown escape", src: `A="\q"`, wantErr: `1: A: unknown escape \q`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, ".env", tt.src)
			env, warnings, err := LoadDotEnv(path, credConfig("A", "B", "C"), tt.process.lookup)
			if len(warnings) > 0 {
				t.Errorf("LoadDotEnv(%q) warnings = %v, want none", tt.src, warnings)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), path+":"+tt.wantErr) {
					t.Fatalf("LoadDotEnv(%q) = %v, want %s:%s…", tt.src, err, path, tt.wantErr)
				}
				var e *Error
				if !errors.As(err, &e) || e.File != path || e.Line == 0 {
					t.Errorf("LoadDotEnv error %#v, want an *Error with file and line", err)
				}
				if len(env.dotenv) != 0 {
					t.Errorf("LoadDotEnv kept %v despite the error", env.dotenv)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadDotEnv(%q): %v", tt.src, err)
			}
			for _, k := range []string{"A", "B", "C"} {
				got, ok := env.Lookup(k)
				want, wantOK := tt.want[k]
				if got != want || ok != wantOK {
					t.Errorf("LoadDotEnv(%q): Lookup(%s) = %q, %v; want %q, %v", tt.src, k, got, ok, want, wantOK)
				}
			}
		})
	}
}

// A .env in a cloned repository supplies the config's credential variables and nothing
// else: not what chooses the config (MYCO_*), the network (proxies, CAs) or the processes
// myco starts. Each refused line is one warning naming the file, the line and the
// variable, and never the value.
func TestLoadDotEnvOnlyCredentials(t *testing.T) {
	c, err := Parse("config.toml", []byte(catalog))
	if err != nil {
		t.Fatal(err)
	}
	src := "MYCO_HOME=/tmp/evil\n" +
		"MYCO_CONFIG=/tmp/evil/config.toml\n" +
		"ANTHROPIC_API_KEY=sk-ant\n" + // a gateway's
		"HTTPS_PROXY=http://evil:8080\n" +
		"SSL_CERT_FILE=/tmp/evil/ca.pem\n" +
		"XAI_API_KEY=sk-xai\n" + // a model's, and not the default model's
		"BASH_ENV=/tmp/evil/rc\n" +
		"LD_PRELOAD=/tmp/evil/x.so\n" +
		"PATH=/tmp/evil/bin\n" +
		"MYCO_PROFILE=evil\n"
	path := writeFile(t, ".env", src)
	env, warnings, err := LoadDotEnv(path, c, fakeEnv{"PATH": "/usr/bin"}.lookup)
	if err != nil {
		t.Fatalf("LoadDotEnv: %v", err)
	}
	for k, want := range map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "XAI_API_KEY": "sk-xai", "PATH": "/usr/bin"} {
		if got, ok := env.Lookup(k); !ok || got != want {
			t.Errorf("Lookup(%s) = %q, %v; want %q", k, got, ok, want)
		}
	}
	for _, k := range []string{"MYCO_HOME", "MYCO_CONFIG", "HTTPS_PROXY", "SSL_CERT_FILE", "BASH_ENV", "LD_PRELOAD", "MYCO_PROFILE"} {
		if got, ok := env.Lookup(k); ok {
			t.Errorf("Lookup(%s) = %q: a .env supplied a variable no auth names", k, got)
		}
	}
	if want := []string{"ANTHROPIC_API_KEY", "XAI_API_KEY"}; !slices.Equal(slices.Sorted(func(yield func(string) bool) {
		for k := range env.dotenv {
			if !yield(k) {
				return
			}
		}
	}), want) {
		t.Errorf("the .env map holds %v, want %v", env.dotenv, want)
	}
	var got []string
	for _, w := range warnings {
		s := w.String()
		got = append(got, fmt.Sprintf("%d %s", w.Line, w.Key))
		if !strings.HasPrefix(s, fmt.Sprintf("%s:%d: %s: ignored", path, w.Line, w.Key)) || strings.Contains(s, "evil") || strings.Contains(s, "\n") {
			t.Errorf("warning %q: want one line naming the file, line and variable, and no value", s)
		}
		if !strings.Contains(s, "ANTHROPIC_API_KEY, XAI_API_KEY") {
			t.Errorf("warning %q does not say which variables a .env may set", s)
		}
	}
	want := []string{"1 MYCO_HOME", "2 MYCO_CONFIG", "4 HTTPS_PROXY", "5 SSL_CERT_FILE", "7 BASH_ENV", "8 LD_PRELOAD", "9 PATH", "10 MYCO_PROFILE"}
	if !slices.Equal(got, want) {
		t.Errorf("warnings for lines %q, want %q", got, want)
	}
}

func TestLoadDotEnvNoConfig(t *testing.T) {
	path := writeFile(t, ".env", "A=1\n")
	env, warnings, err := LoadDotEnv(path, nil, nil)
	if err != nil || len(warnings) != 1 || warnings[0].Key != "A" {
		t.Fatalf("LoadDotEnv(nil config) = %v, %v; want one warning for A", warnings, err)
	}
	if _, ok := env.Lookup("A"); ok {
		t.Error("Lookup(A) found a variable no config names")
	}
}

func TestLoadDotEnvMissing(t *testing.T) {
	env, warnings, err := LoadDotEnv(filepath.Join(t.TempDir(), ".env"), credConfig("A"), fakeEnv{"A": "x"}.lookup)
	if err != nil || len(warnings) != 0 {
		t.Errorf("LoadDotEnv(missing) = %v, %v; want nothing", warnings, err)
	}
	if v, _ := env.Lookup("A"); v != "x" {
		t.Errorf("Lookup(A) = %q, want the environment's x", v)
	}
}

// A .env that is not a plain file of this user is ignored as a whole, at once: a symlink
// to a device or a FIFO must neither hang startup nor fill memory.
func TestLoadDotEnvIgnoredFiles(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, make func(path string) error) string {
		path := filepath.Join(dir, name)
		if err := make(path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	big := strings.Repeat("# padding\n", MaxDotEnvBytes/10+1) + "A=1\n"
	cases := []struct{ name, path, want string }{
		{"directory", mk("dir", func(p string) error { return os.Mkdir(p, 0o700) }), "not a regular file"},
		{"device", mk("zero", func(p string) error { return os.Symlink("/dev/zero", p) }), "not a regular file"},
		{"fifo", mk("fifo", func(p string) error { return syscall.Mkfifo(p, 0o600) }), "not a regular file"},
		{"too large", mk("big", func(p string) error { return os.WriteFile(p, []byte(big), 0o600) }), fmt.Sprintf("larger than %d bytes", MaxDotEnvBytes)},
		{"group-writable", mk("gw", func(p string) error {
			if err := os.WriteFile(p, []byte("A=1\n"), 0o600); err != nil {
				return err
			}
			return os.Chmod(p, 0o620)
		}), "group or others may write to it; if it is yours, run: chmod go-w " + filepath.Join(dir, "gw")},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			env, warnings, err := LoadDotEnv(tt.path, credConfig("A"), nil)
			if err != nil || len(warnings) != 1 {
				t.Fatalf("LoadDotEnv(%s) = %v, %v; want one warning", tt.name, warnings, err)
			}
			if s := warnings[0].String(); !strings.HasPrefix(s, tt.path+": ignored") || !strings.Contains(s, tt.want) {
				t.Errorf("warning %q, want %s: ignored…%s", s, tt.path, tt.want)
			}
			if _, ok := env.Lookup("A"); ok {
				t.Error("an ignored .env supplied A")
			}
		})
	}
}

// Another user's .env (in a shared directory) could hand myco a key of theirs, and read
// the conversation in their gateway account: it is ignored.
func TestLoadDotEnvOtherUser(t *testing.T) {
	path := writeFile(t, ".env", "A=theirs\n")
	giveAway(t, path, false)
	env, warnings, err := LoadDotEnv(path, credConfig("A"), nil)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0].Msg, fmt.Sprintf("uid %d)", otherUID())) {
		t.Fatalf("LoadDotEnv(another user's) = %v, %v; want a warning naming the owner", warnings, err)
	}
	if _, ok := env.Lookup("A"); ok {
		t.Error("another user's .env supplied A")
	}
}

// otherUID is a user other than the one running the tests.
func otherUID() int {
	if os.Getuid() == 65534 {
		return 65533
	}
	return 65534
}

// giveAway makes another user ([otherUID]) the owner of path (the symlink itself when
// link is set). That needs root, which CI has; elsewhere the test is skipped.
func giveAway(t *testing.T, path string, link bool) {
	t.Helper()
	chown := os.Chown
	if link {
		chown = os.Lchown
	}
	if err := chown(path, otherUID(), otherUID()); err != nil {
		needs.Missing(t, "chown to another user (it needs root): %v", err)
	}
}

func TestEnvLookup(t *testing.T) {
	var zero Env
	if v, ok := zero.Lookup("A"); ok {
		t.Errorf("zero Env: Lookup(A) = %q, true", v)
	}
	e := Env{process: fakeEnv{"A": "p", "E": ""}.lookup, dotenv: map[string]string{"A": "d", "B": "d", "E": "d"}}
	for _, tt := range []struct {
		name, want string
		ok         bool
	}{{"A", "p", true}, {"B", "d", true}, {"E", "", true}, {"Z", "", false}} {
		if got, ok := e.Lookup(tt.name); got != tt.want || ok != tt.ok {
			t.Errorf("Lookup(%s) = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}
