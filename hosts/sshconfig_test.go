package hosts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoadSSHConfig(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, ".ssh", "config")
	writeFile(t, cfg, `# the user's config
Include conf.d/*.conf
Host *
	ServerAliveInterval 30

Host devbox build-? !bastion
	HostName 10.0.0.2
Host local
	HostName 10.0.0.3
Match host gpu
	User root
Host = gpu "quoted"
	User me
include ~/extra/more
Host -oProxyCommand=evil
Host devbox
	User again
`)
	writeFile(t, filepath.Join(home, ".ssh", "conf.d", "a.conf"), "Host alpha\n  HostName 10.0.1.1\nInclude /nonexistent/*\n")
	writeFile(t, filepath.Join(home, ".ssh", "conf.d", "b.conf"), "Host beta *.corp\n")
	writeFile(t, filepath.Join(home, ".ssh", "conf.d", "ignored.txt"), "Host nope\n")
	writeFile(t, filepath.Join(home, "extra", "more"), "Host omega\n")

	specs, err := LoadSSHConfig(SSHConfigOptions{Path: cfg, Default: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range specs {
		got = append(got, s.Alias+"@"+strings.TrimPrefix(s.Source, home))
		if s.ConfigFile != "" {
			t.Errorf("%s: ConfigFile = %q for ssh's default config, want none", s.Alias, s.ConfigFile)
		}
	}
	want := "alpha@/.ssh/conf.d/a.conf beta@/.ssh/conf.d/b.conf devbox@/.ssh/config gpu@/.ssh/config quoted@/.ssh/config omega@/extra/more"
	if strings.Join(got, " ") != want {
		t.Errorf("LoadSSHConfig =\n%s\nwant\n%s", strings.Join(got, " "), want)
	}

	// Another HOME than the passwd one: ssh must be told which file.
	specs, err = LoadSSHConfig(SSHConfigOptions{Path: cfg, Default: "/root/.ssh/config"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if s.ConfigFile != cfg {
			t.Errorf("%s: ConfigFile = %q, want -F %q", s.Alias, s.ConfigFile, cfg)
		}
		// ssh -F resolves relative Includes in the passwd home, not in this one.
		viaRelative := s.Source != cfg
		if viaRelative != strings.Contains(s.Note, "relative Include") {
			t.Errorf("%s (from %s): Note = %q", s.Alias, s.Source, s.Note)
		}
	}
}

func TestLoadSSHConfigMissing(t *testing.T) {
	specs, err := LoadSSHConfig(SSHConfigOptions{Path: filepath.Join(t.TempDir(), ".ssh", "config")})
	if err != nil || specs != nil {
		t.Errorf("LoadSSHConfig(missing) = %v, %v; want local only", specs, err)
	}
}

func TestDecodeSSHConfigErrors(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, ".ssh", "config")
	writeFile(t, cfg, "Include config\nHost a\n")
	if _, err := LoadSSHConfig(SSHConfigOptions{Path: cfg}); err == nil || !strings.Contains(err.Error(), "Include nested") {
		t.Errorf("a self-including config: err = %v, want the depth error", err)
	}
}

func TestIncludeLine(t *testing.T) {
	tests := []struct {
		line string
		want string
		ok   bool
	}{
		{"Include a b", "a b", true},
		{"  include=a", "a", true},
		{"\tINCLUDE \"x y\" # comment", "x y", true},
		{"IncludeX a", "", false},
		{"Host include", "", false},
	}
	for _, tt := range tests {
		pats, ok := includeLine(tt.line)
		if ok != tt.ok || strings.Join(pats, " ") != tt.want {
			t.Errorf("includeLine(%q) = %q, %v; want %q, %v", tt.line, pats, ok, tt.want, tt.ok)
		}
	}
}
