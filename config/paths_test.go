package config

import (
	"myco.dev/internal/shquote"
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
			opts: PathOptions{UserHome: home, Getenv: env(map[string]string{"MYCO_HOME": home + "/myco-test/"})},
			want: Paths{
				Home: home + "/myco-test", Profile: "default",
				ProfileDir: home + "/myco-test/profiles/default",
				ConfigFile: home + "/myco-test/profiles/default/config.toml",
			},
		},
		{
			name: "empty MYCO_PROFILE is unset",
			opts: PathOptions{UserHome: home, Getenv: env(map[string]string{"MYCO_PROFILE": ""})},
			want: Paths{
				Home: filepath.Join(home, ".myco"), Profile: "default",
				ProfileDir: filepath.Join(home, ".myco", "profiles", "default"),
				ConfigFile: filepath.Join(home, ".myco", "profiles", "default", "config.toml"),
			},
		},
		{
			name: "--profile set beats MYCO_PROFILE",
			opts: PathOptions{UserHome: home, ProfileFlag: "x", ProfileSet: true, Getenv: env(map[string]string{"MYCO_PROFILE": "work"})},
			want: Paths{
				Home: filepath.Join(home, ".myco"), Profile: "x",
				ProfileDir: filepath.Join(home, ".myco", "profiles", "x"),
				ConfigFile: filepath.Join(home, ".myco", "profiles", "x", "config.toml"),
			},
		},
		{name: "empty --profile", opts: PathOptions{UserHome: home, ProfileSet: true, Getenv: env(map[string]string{"MYCO_PROFILE": "work"})}, wantErr: "--profile: profile name is empty"},
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
	// Every directory is private: the workspace and manual hold the agents' notes, which
	// may quote anything they read.
	for _, d := range []string{p.Home, filepath.Join(p.Home, "profiles"), p.ProfileDir, p.SessionDir(), p.WorkspaceDir(), p.PreludeDir(), p.ManualDir()} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatalf("Ensure did not create %s: %v", d, err)
		}
		if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want a directory with mode 0700", d, fi.Mode())
		}
	}
	if got, want := p.PreludeDir(), filepath.Join(p.ProfileDir, "workspace", "prelude"); got != want {
		t.Errorf("PreludeDir = %q, want %q", got, want)
	}
	if err := p.Ensure(); err != nil {
		t.Errorf("second Ensure: %v", err)
	}
}

// mkdir creates dir with exactly mode perm, whatever the umask.
func mkdir(t *testing.T, dir string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
}

// Another user who pre-creates MYCO_HOME (or a directory under it, or a symlink to it)
// could hand myco a config of theirs: a gateway of theirs would receive the user's key.
// Such a directory is refused, with its owner and mode and the command that fixes it.
func TestResolvePathsUntrusted(t *testing.T) {
	me := Who(os.Getuid())
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, home string) // home is MYCO_HOME, not yet created
		want  []string                        // substrings of the error; "$H" is replaced by home
	}{
		{"missing", func(t *testing.T, home string) {}, nil},
		{"private", func(t *testing.T, home string) { mkdir(t, home+"/profiles/default", 0o700) }, nil},
		{"readable by others", func(t *testing.T, home string) { mkdir(t, home, 0o755) }, nil},
		{"group-writable home", func(t *testing.T, home string) { mkdir(t, home, 0o770) }, []string{
			"refusing the installation directory (MYCO_HOME) $H (owner " + me + ", mode drwxrwx---): group or others may write to it",
			"run: chmod go-w $H",
		}},
		{"world-writable home", func(t *testing.T, home string) { mkdir(t, home, 0o777) }, []string{"mode drwxrwxrwx", "chmod go-w $H"}},
		{"sticky world-writable home", func(t *testing.T, home string) { mkdir(t, home, 0o1777) }, []string{"chmod go-w $H"}},
		{"group-writable profiles", func(t *testing.T, home string) { mkdir(t, home, 0o700); mkdir(t, home+"/profiles", 0o775) }, []string{
			"refusing the profiles directory $H/profiles", "chmod go-w $H/profiles"}},
		{"writable profile directory", func(t *testing.T, home string) {
			mkdir(t, home+"/profiles", 0o700)
			mkdir(t, home+"/profiles/default", 0o702)
		}, []string{
			"refusing the profile directory $H/profiles/default", "mode drwx----w-", "chmod go-w $H/profiles/default"}},
		{"home is a file", func(t *testing.T, home string) {
			if err := os.WriteFile(home, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, []string{"$H is not a directory"}},
		{"my symlink to a private directory", func(t *testing.T, home string) {
			mkdir(t, home+".real", 0o700)
			if err := os.Symlink(home+".real", home); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"my symlink to a writable directory", func(t *testing.T, home string) {
			mkdir(t, home+".real", 0o777)
			if err := os.Symlink(home+".real", home); err != nil {
				t.Fatal(err)
			}
		}, []string{"$H (owner " + me + ", mode drwxrwxrwx)", "chmod go-w $H"}},
		{"another user's home", func(t *testing.T, home string) { mkdir(t, home, 0o755); giveAway(t, home, false) }, []string{
			"refusing the installation directory (MYCO_HOME) $H (owner " + Who(otherUID()) + ", mode drwxr-xr-x): it belongs to another user",
			"run: sudo chown " + userArg(os.Getuid()) + " $H",
		}},
		{"another user's writable profile directory", func(t *testing.T, home string) {
			mkdir(t, home+"/profiles", 0o700)
			mkdir(t, home+"/profiles/default", 0o777)
			giveAway(t, home+"/profiles/default", false)
		}, []string{"it belongs to another user and group or others may write to it",
			"run: sudo chown " + userArg(os.Getuid()) + " $H/profiles/default && chmod go-w $H/profiles/default"}},
		{"another user's symlink to my directory", func(t *testing.T, home string) {
			mkdir(t, home+".real", 0o700)
			if err := os.Symlink(home+".real", home); err != nil {
				t.Fatal(err)
			}
			giveAway(t, home, true)
		}, []string{"refusing the installation directory (MYCO_HOME) $H: it is a symlink owned by " + Who(otherUID()), "sudo chown -h " + userArg(os.Getuid()) + " $H"}},
		{"another user's symlinked profile directory", func(t *testing.T, home string) {
			mkdir(t, home+"/profiles", 0o700)
			mkdir(t, home+"/elsewhere", 0o700)
			if err := os.Symlink(home+"/elsewhere", home+"/profiles/default"); err != nil {
				t.Fatal(err)
			}
			giveAway(t, home+"/profiles/default", true)
		}, []string{"refusing the profile directory $H/profiles/default: it is a symlink owned by"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "myco-test")
			tt.setup(t, home)
			_, err := ResolvePaths(PathOptions{Getenv: env(map[string]string{"MYCO_HOME": home})})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("ResolvePaths = %v, want success", err)
				}
				return
			}
			for _, w := range tt.want {
				w = strings.ReplaceAll(w, "$H", home)
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("ResolvePaths = %v\nwant an error containing %q", err, w)
				}
			}
		})
	}
}

// A directory another user creates after ResolvePaths and before Ensure is refused too.
func TestPathsEnsureChecks(t *testing.T) {
	home := filepath.Join(t.TempDir(), "myco-test")
	p, err := ResolvePaths(PathOptions{Getenv: env(map[string]string{"MYCO_HOME": home})})
	if err != nil {
		t.Fatal(err)
	}
	mkdir(t, home+"/profiles", 0o777)
	if err := p.Ensure(); err == nil || !strings.Contains(err.Error(), "chmod go-w "+home+"/profiles") {
		t.Errorf("Ensure = %v, want the writable profiles directory refused", err)
	}
}

// Root may own what myco reads, as OpenSSH allows for its config; no one else but the
// user may.
func TestUntrustedOwners(t *testing.T) {
	root, err := os.Stat("/") // owned by root, writable by root only, on every Unix
	if err != nil {
		t.Fatal(err)
	}
	if why := untrusted(root, 12345); why != "" {
		t.Errorf("untrusted(/, uid 12345) = %q, want root accepted", why)
	}
	dir := t.TempDir()
	mine, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if why := untrusted(mine, os.Getuid()); why != "" {
		t.Errorf("untrusted(my private directory) = %q, want it trusted", why)
	}
	if os.Getuid() != 0 {
		// Seen from another, non-root user, this user's directory is someone else's.
		if why := untrusted(mine, os.Getuid()+1); why != "it belongs to another user" {
			t.Errorf("untrusted(another user's directory) = %q", why)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/home/me/.myco": "/home/me/.myco",
		"/a b/c":         `'/a b/c'`,
		"/it's":          `'/it'\''s'`,
		"$(rm -rf ~)":    `'$(rm -rf ~)'`,
		"":               `''`,
	} {
		if got := shquote.Quote(in); got != want {
			t.Errorf("shquote.Quote(%q) = %s, want %s", in, got, want)
		}
	}
}
