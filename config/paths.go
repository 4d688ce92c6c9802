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
// resolution never reads process state on its own; nil means an empty environment.
type PathOptions struct {
	ProfileFlag string // --profile; empty means unset
	ConfigFlag  string // --config; empty means unset
	Getenv      func(string) string
	UserHome    string // the user's home directory, the parent of the default MYCO_HOME
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
// then $MYCO_CONFIG, then ProfileDir/config.toml). It creates nothing; see [Paths.Ensure].
func ResolvePaths(o PathOptions) (Paths, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}

	profile, source := o.ProfileFlag, "--profile"
	if profile == "" {
		profile, source = getenv("MYCO_PROFILE"), "MYCO_PROFILE"
	}
	if profile == "" {
		profile = DefaultProfile
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
	return p, nil
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

// WorkspaceDir is the agents' own directory, shared by every agent of the profile.
func (p Paths) WorkspaceDir() string { return filepath.Join(p.ProfileDir, "workspace") }

// PreludeDir holds the prelude entries, inside [Paths.WorkspaceDir].
func (p Paths) PreludeDir() string { return filepath.Join(p.ProfileDir, "workspace", "prelude") }

// ManualDir is where the manual is exported on startup.
func (p Paths) ManualDir() string { return filepath.Join(p.ProfileDir, "manual") }

// Ensure creates the profile's directories if they are missing. The installation and
// profile directories and session/ are private (0700): they hold the config, which may
// carry credentials, and conversations. The workspace and manual are ordinary 0755
// directories, guarded by the profile directory above them. Existing directories keep
// their permissions.
func (p Paths) Ensure() error {
	for _, d := range []struct {
		path string
		perm os.FileMode
	}{
		{p.Home, 0o700},
		{p.ProfileDir, 0o700},
		{p.SessionDir(), 0o700},
		{p.WorkspaceDir(), 0o755},
		{p.PreludeDir(), 0o755},
		{p.ManualDir(), 0o755},
	} {
		if err := os.MkdirAll(d.path, d.perm); err != nil {
			return fmt.Errorf("create profile directory: %w", err)
		}
	}
	return nil
}
