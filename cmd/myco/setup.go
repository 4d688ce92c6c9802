package main

import (
	"fmt"
	"os"
	"path/filepath"

	"myco.dev/config"
	"myco.dev/hosts"
	"myco.dev/internal/termtext"
)

// profile is everything startup resolves once: paths, config, the selected model and the
// environment credentials are looked up in.
type profile struct {
	// remotes returns the remote hosts and their options (from ~/.ssh/config).
	remotes func() ([]hosts.RemoteSpec, hosts.RemoteOptions, error)
	paths   config.Paths
	cfg     *config.Config
	model   config.Model // the launch model: --model, else the config's default
	env     config.Env   // the process environment, then the .env credentials
	home    string       // the user's home directory, for ~/ in auth file paths
	// serverURL is this instance's URL when myco serves it (MYCO_SERVER_URL for tools);
	// tokenFile the 0600 file holding the header that carries its secret, where the owner
	// of a connection cannot be told (MYCO_SERVER_TOKEN_FILE for tools).
	serverURL, tokenFile string
}

// setup resolves the profile from the real environment, loads and validates the config,
// reads the working directory's .env for the credentials the config names, and selects
// the model, all before any model call.
func (a *app) setup(o options) (*profile, error) {
	home, _ := os.UserHomeDir()
	paths, err := config.ResolvePaths(config.PathOptions{
		ProfileFlag: o.profile, ProfileSet: o.profileSet, ConfigFlag: o.config, Getenv: a.getenv, UserHome: home,
	})
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(paths.ConfigFile, paths.ConfigNamed)
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings {
		a.warn(w.String())
	}
	key, err := cfg.DefaultModel(o.model)
	if err != nil {
		return nil, err
	}
	m, err := cfg.Resolve(key)
	if err != nil {
		return nil, err
	}
	env := config.NewEnv(os.LookupEnv)
	if wd, err := os.Getwd(); err == nil {
		var warnings []config.Warning
		env, warnings, err = config.LoadDotEnv(filepath.Join(wd, ".env"), cfg, os.LookupEnv)
		if err != nil {
			return nil, err
		}
		for _, w := range warnings {
			a.warn(w.String())
		}
	}
	if err := paths.Ensure(); err != nil {
		return nil, err
	}
	if err := startWorkspace(paths, cfg); err != nil {
		return nil, err
	}
	pr := &profile{paths: paths, cfg: cfg, model: m, env: env, home: home}
	pr.remotes = func() ([]hosts.RemoteSpec, hosts.RemoteOptions, error) { return a.remoteOptions(pr) }
	return pr, nil
}

// warn prints a one-line warning on stderr, made safe for the terminal.
func (a *app) warn(msg string) {
	fmt.Fprintln(a.stderr, "myco: warning:", termtext.Safe(msg))
}
