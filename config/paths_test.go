package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestResolvePaths(t *testing.T) {
	home := t.TempDir()
	for _, tt := range []struct {
		name    string
		opts    PathOptions
		want    Paths
		wantErr string // substring; empty means success
	}{
		{
			name: "defaults",
			opts: PathOptions{UserHome: home},
			want: Paths{
				Home: filepath.Join(home, ".myco"), Profile: "default",
				ProfileDir: filepath.Join(home, ".myco", "profiles", "default"),
				ConfigFile: filepath.Join(home, ".myco", "profiles", "default", "config.toml"),
			},
		},
		{
			name: "MYCO_PROFILE",
			opts: PathOptions{UserHome: home, Getenv: env(map[string]string{"MYCO_PROFILE": "work_2"})},
			want: Paths{
				Home: filepath.Join(home, ".myco"), Profile: "work_2",
				ProfileDir: filepath.Join(home, ".myco", "profiles", "work_2"),
				ConfigFile: filepath.Join(home, ".myco", "profiles", "work_2", "config.toml"),
			},
		},
		{
			name: "flag beats MYCO_PROFILE",
			opts: PathOptions{UserHome: home, ProfileFlag: "my-test", Getenv: env(map[string]string{"MYCO_PROFILE": "work"})},
			want: Paths{
				Home: filepath.Join(home, ".myco"), Profile: "my-test",
				ProfileDir: filepath.Join(home, ".myco", "profiles", "my-test"),
				ConfigFile: filepath.Join(home, ".myco", "profiles", "my-test", "config.toml"),
			},
		},
		{
			name: "MYCO_HOME",
			opts: PathOptions{UserHome: home, Getenv: env(map[string]string{"MYCO_HOME": "/tmp/myco-test/"})},
			want: Paths{
				Home: "/tmp/myco-test", Profile: "default",
				ProfileDir: "/tmp/myco-test/profiles/default",
				ConfigFile: "/tmp/myco-test/profiles/default/config.toml",
			},
		},
		{
			name: "MYCO_CONFIG is named",
			opts: PathOptions{UserHome: home, Getenv: env(map[string]string{"MYCO_CONFIG": "/etc/myco.toml"})},
			want: Paths{
				Home: filepath.Join(home, ".myco"), Profile: "default",
				ProfileDir:  filepath.Join(home, ".myco", "profiles", "default"),
				ConfigFile:  "/etc/myco.toml",
				ConfigNamed: true,
			},
		},
		{
			name: "--config beats MYCO_CONFIG",
			opts: PathOptions{UserHome: home, ConfigFlag: "/a/c.toml", Getenv: env(map[string]string{"MYCO_CONFIG": "/etc/myco.toml"})},
			want: Paths{
				Home: filepath.Join(home, ".myco"), Profile: "default",
				ProfileDir:  filepath.Join(home, ".myco", "profiles", "default"),
				ConfigFile:  "/a/c.toml",
				ConfigNamed: true,
			},
		},
		{name: "slash", opts: PathOptions{UserHome: home, ProfileFlag: "a/b"}, wantErr: `"a/b"`},
		{name: "dot", opts: PathOptions{UserHome: home, ProfileFlag: "a.b"}, wantErr: `"a.b"`},
		{name: "dotdot", opts: PathOptions{UserHome: home, ProfileFlag: ".."}, wantErr: `".."`},
		{name: "space", opts: PathOptions{UserHome: home, ProfileFlag: "my profile"}, wantErr: `"my profile"`},
		{name: "non-ASCII letter", opts: PathOptions{UserHome: home, ProfileFlag: "prôfile"}, wantErr: `"prôfile"`},
		{name: "bad MYCO_PROFILE", opts: PathOptions{UserHome: home, Getenv: env(map[string]string{"MYCO_PROFILE": "../x"})}, wantErr: `MYCO_PROFILE: invalid profile name "../x"`},
		{name: "no home", opts: PathOptions{}, wantErr: "home directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolvePaths(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ResolvePaths(%+v) error = %v, want one containing %q", tt.opts, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolvePaths(%+v): %v", tt.opts, err)
			}
			if got != tt.want {
				t.Errorf("ResolvePaths(%+v) =\n%+v, want\n%+v", tt.opts, got, tt.want)
			}
		})
	}
}

func TestResolvePathsRelative(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	p, err := ResolvePaths(PathOptions{ConfigFlag: "c.toml", Getenv: env(map[string]string{"MYCO_HOME": "rel"})})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "rel"); p.Home != want {
		t.Errorf("Home = %q, want %q", p.Home, want)
	}
	if want := filepath.Join(dir, "c.toml"); p.ConfigFile != want {
		t.Errorf("ConfigFile = %q, want %q", p.ConfigFile, want)
	}
}

func TestCheckProfileName(t *testing.T) {
	for _, name := range []string{"default", "A-b_9", "x"} {
		if err := CheckProfileName(name); err != nil {
			t.Errorf("CheckProfileName(%q) = %v, want nil", name, err)
		}
	}
	for _, name := range []string{"", ".", "..", "a/b", `a\b`, "a b", "a.b", "a\n"} {
		if err := CheckProfileName(name); err == nil {
			t.Errorf("CheckProfileName(%q) = nil, want an error", name)
		}
	}
}

func TestPathsEnsure(t *testing.T) {
	p, err := ResolvePaths(PathOptions{UserHome: t.TempDir(), ProfileFlag: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Ensure(); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	for _, d := range []struct {
		path string
		perm os.FileMode
	}{
		{p.ProfileDir, 0o700},
		{p.SessionDir(), 0o700},
		{p.WorkspaceDir(), 0o755},
		{p.PreludeDir(), 0o755},
		{p.ManualDir(), 0o755},
	} {
		fi, err := os.Stat(d.path)
		if err != nil {
			t.Fatalf("Ensure did not create %s: %v", d.path, err)
		}
		// The umask may only take bits away.
		if !fi.IsDir() || fi.Mode().Perm()&^d.perm != 0 {
			t.Errorf("%s: mode %v, want a directory within %v", d.path, fi.Mode(), d.perm)
		}
	}
	if got, want := p.PreludeDir(), filepath.Join(p.ProfileDir, "workspace", "prelude"); got != want {
		t.Errorf("PreludeDir = %q, want %q", got, want)
	}
	if err := p.Ensure(); err != nil {
		t.Errorf("second Ensure: %v", err)
	}
}
