package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// DefaultProfile is the profile used when neither --profile nor MYCO_PROFILE names one.
const DefaultProfile = "default"

// PathOptions are the inputs of [ResolvePaths]. Getenv stands in for os.Getenv so that
// resolution never reads process state on its own; nil means an empty environment. It
// must be the real environment: MYCO_PROFILE, MYCO_HOME and MYCO_CONFIG never come from
// a .env.
type PathOptions struct {
	ProfileFlag string // --profile
	// ProfileSet reports that --profile was given, even as "": then an empty
	// ProfileFlag is an error rather than a fallback to MYCO_PROFILE and "default".
	// A non-empty ProfileFlag counts as given either way.
	ProfileSet bool
	ConfigFlag string // --config; empty means unset
	Getenv     func(string) string
	UserHome   string // the user's home directory, the parent of the default MYCO_HOME
}

// Paths are the resolved locations of one profile. Every path is absolute.
type Paths struct {
	Home       string // MYCO_HOME, by default ~/.myco
	Profile    string // the profile name
	ProfileDir string // Home/profiles/Profile
	ConfigFile string // the config.toml to load
	// ConfigNamed reports that ConfigFile was named by --config or $MYCO_CONFIG, so it
	// must exist; the defaulted ProfileDir/config.toml may be absent on a first run.
	ConfigNamed bool
}

// ResolvePaths picks the profile (--profile, then MYCO_PROFILE, then "default"), the
// installation directory (MYCO_HOME, then UserHome/.myco) and the config file (--config,
// then $MYCO_CONFIG, then ProfileDir/config.toml).
//
// It creates nothing ([Paths.Ensure] does), but it refuses an installation, profiles or
// profile directory that exists and that another user could have written: one owned by
// neither this user nor root, one that group or others may write to, or a symlink owned
// by another user. The error names the directory, its owner and mode, and the command
// that fixes it. The config file is checked when it is read ([Load]).
func ResolvePaths(o PathOptions) (Paths, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}

	profile, source := o.ProfileFlag, "--profile"
	if profile == "" && !o.ProfileSet {
		profile, source = getenv("MYCO_PROFILE"), "MYCO_PROFILE"
		if profile == "" {
			profile = DefaultProfile
		}
	}
	if err := CheckProfileName(profile); err != nil {
		return Paths{}, fmt.Errorf("%s: %w", source, err)
	}

	home := getenv("MYCO_HOME")
	if home == "" {
		if o.UserHome == "" {
			return Paths{}, errors.New("resolve paths: neither MYCO_HOME nor the user's home directory is known")
		}
		home = filepath.Join(o.UserHome, ".myco")
	}
	home, err := filepath.Abs(home)
	if err != nil {
		return Paths{}, fmt.Errorf("resolve MYCO_HOME: %w", err)
	}

	p := Paths{Home: home, Profile: profile, ProfileDir: filepath.Join(home, "profiles", profile)}
	switch {
	case o.ConfigFlag != "":
		p.ConfigFile, p.ConfigNamed = o.ConfigFlag, true
	case getenv("MYCO_CONFIG") != "":
		p.ConfigFile, p.ConfigNamed = getenv("MYCO_CONFIG"), true
	default:
		p.ConfigFile = filepath.Join(p.ProfileDir, "config.toml")
	}
	// Absolute, so that errors name a path that still means something after a tool
	// process changes directory.
	if p.ConfigFile, err = filepath.Abs(p.ConfigFile); err != nil {
		return Paths{}, fmt.Errorf("resolve config path: %w", err)
	}
	if err := p.check(os.Getuid()); err != nil {
		return Paths{}, err
	}
	return p, nil
}

// check refuses the directories above everything the profile reads and writes when
// another user could have written them; those below are guarded by them. Missing ones
// pass: [Paths.Ensure] creates them private and checks again.
func (p Paths) check(uid int) error {
	for _, d := range []struct{ what, path string }{
		{"installation directory (MYCO_HOME)", p.Home},
		{"profiles directory", filepath.Join(p.Home, "profiles")},
		{"profile directory", p.ProfileDir},
	} {
		if err := checkDir(d.what, d.path, uid); err != nil {
			return err
		}
	}
	return nil
}

// CheckProfileName reports whether name is a valid profile name: one or more ASCII
// letters, digits, hyphens or underscores. The name becomes a directory and a URL path
// segment (/profiles/NAME/), so nothing else is allowed.
func CheckProfileName(name string) error {
	if name == "" {
		return errors.New("profile name is empty")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("invalid profile name %q: use only letters, digits, '-' and '_'", name)
		}
	}
	return nil
}

// SessionDir is where the profile's sessions are stored.
func (p Paths) SessionDir() string { return filepath.Join(p.ProfileDir, "session") }

// SnapshotDir is where the profile keeps the snapshots of its sessions' files (see
// docs/changes.md): never inside a project.
func (p Paths) SnapshotDir() string { return filepath.Join(p.ProfileDir, "snapshots") }

// WorkspaceDir is the agents' own directory, shared by every agent of the profile.
func (p Paths) WorkspaceDir() string { return filepath.Join(p.ProfileDir, "workspace") }

// PreludeDir holds the prelude entries, inside [Paths.WorkspaceDir].
func (p Paths) PreludeDir() string { return filepath.Join(p.ProfileDir, "workspace", "prelude") }

// ManualDir is where the manual is exported on startup.
func (p Paths) ManualDir() string { return filepath.Join(p.ProfileDir, "manual") }

// Ensure creates the profile's directories that are missing, each private (0700): they
// hold the config, which may carry credentials, conversations, and the agents' notes,
// which may quote them. Existing directories keep their permissions. It then checks the
// directories again as [ResolvePaths] does, so that one another user created in the
// meantime is refused rather than used.
func (p Paths) Ensure() error {
	for _, d := range []string{p.Home, p.ProfileDir, p.SessionDir(), p.WorkspaceDir(), p.PreludeDir(), p.ManualDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create profile directory: %w", err)
		}
	}
	return p.check(os.Getuid())
}
