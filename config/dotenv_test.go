package config

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeEnv is an environment for LoadDotEnv.
type fakeEnv map[string]string

func (e fakeEnv) lookup(k string) (string, bool) { v, ok := e[k]; return v, ok }
func (e fakeEnv) set(k, v string) error          { e[k] = v; return nil }

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadDotEnv(t *testing.T) {
	for _, tt := range []struct {
		name    string
		src     string
		before  fakeEnv
		want    fakeEnv
		wantErr string // after "FILE:"; empty means success
	}{
		{name: "plain", src: "A=1\nB = two words \n", want: fakeEnv{"A": "1", "B": "two words"}},
		{name: "export, comments, blanks", src: "# c\n\nexport A=1\n  # indented\r\nB=2\r\n", want: fakeEnv{"A": "1", "B": "2"}},
		{name: "inline comment", src: "A=x # note\nB=a#b\n", want: fakeEnv{"A": "x", "B": "a#b"}},
		{name: "single quotes are literal", src: `A='a\nb # c' # note` + "\n", want: fakeEnv{"A": `a\nb # c`}},
		{name: "double quotes escape", src: `A="line1\nline2\t\"q\" \\ \$"` + "\n", want: fakeEnv{"A": "line1\nline2\t\"q\" \\ $"}},
		{name: "empty values", src: "A=\nB=''\nC=\"\"\n", want: fakeEnv{"A": "", "B": "", "C": ""}},
		{name: "equals in value", src: "A=b=c\n", want: fakeEnv{"A": "b=c"}},
		{name: "never overrides", src: "A=new\nB=new\n", before: fakeEnv{"A": "old", "B": ""}, want: fakeEnv{"A": "old", "B": ""}},
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
			got := fakeEnv{}
			maps.Copy(got, tt.before)
			err := LoadDotEnv(path, got.lookup, got.set)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), path+":"+tt.wantErr) {
					t.Fatalf("LoadDotEnv(%q) = %v, want %s:%s…", tt.src, err, path, tt.wantErr)
				}
				var e *Error
				if !errors.As(err, &e) || e.File != path || e.Line == 0 {
					t.Errorf("LoadDotEnv error %#v, want an *Error with file and line", err)
				}
				if len(got) != len(tt.before) {
					t.Errorf("LoadDotEnv set %v despite the error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadDotEnv(%q): %v", tt.src, err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("LoadDotEnv(%q) env = %q, want %q", tt.src, got, tt.want)
			}
		})
	}
}

func TestLoadDotEnvMissing(t *testing.T) {
	e := fakeEnv{}
	if err := LoadDotEnv(filepath.Join(t.TempDir(), ".env"), e.lookup, e.set); err != nil {
		t.Errorf("LoadDotEnv(missing) = %v, want nil", err)
	}
}

func TestLoadDotEnvSetError(t *testing.T) {
	path := writeFile(t, ".env", "A=1\n")
	boom := errors.New("boom")
	err := LoadDotEnv(path, fakeEnv{}.lookup, func(string, string) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("LoadDotEnv = %v, want it to wrap %v", err, boom)
	}
}
