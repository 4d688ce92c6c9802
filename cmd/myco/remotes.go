package main

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"time"

	"myco.dev/config"
	"myco.dev/hosts"
	"myco.dev/hosts/proto"
	"myco.dev/sessions/catalog"
)

// remoteOptions builds the harness options for the remotes of ~/.ssh/config: lazy ssh
// workers spawned with the catalog's largest image cap (each call is held to its session's
// model's) and the config's attach timeout.
func (a *app) remoteOptions(p *profile) ([]hosts.RemoteSpec, hosts.RemoteOptions, error) {
	specs, _, err := a.sshRemotes()
	if err != nil {
		return nil, hosts.RemoteOptions{}, err
	}
	return specs, a.remoteDefaults(catalog.LargestImageCap(p.cfg), time.Duration(p.cfg.AttachTimeoutSecs)*time.Second, p.cfg.CredentialVars()), nil
}

// sshRemotes reads the remote hosts of $HOME/.ssh/config, and returns them with that
// file's path. OpenSSH reads the passwd home's config, so when $HOME differs the remotes
// get -F with the file myco parsed.
func (a *app) sshRemotes() ([]hosts.RemoteSpec, string, error) {
	home := a.getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	def := ""
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		def = filepath.Join(u.HomeDir, ".ssh", "config")
	}
	path := filepath.Join(home, ".ssh", "config")
	if def == path {
		def = ""
	}
	specs, err := hosts.LoadSSHConfig(hosts.SSHConfigOptions{Path: path, Home: home, Default: def})
	return specs, path, err
}

// remoteDefaults are the options of every remote controller. The host removes the
// variables withoutEnv names (the model credentials) from its tool processes.
func (a *app) remoteDefaults(maxImage int, attach time.Duration, withoutEnv []string) hosts.RemoteOptions {
	dir, _ := os.Getwd()
	return hosts.RemoteOptions{
		MaxImageBase64Bytes: maxImage,
		WithoutEnv:          withoutEnv,
		AttachTimeout:       attach,
		PingInterval:        5 * time.Second,
		Log:                 a.log,
		Hello:               proto.Hello{Version: buildInfo().String(), OS: runtime.GOOS, Arch: runtime.GOARCH, Dir: dir},
	}
}

// attachTimeout is the config's attach_timeout_secs when the config can be read, else
// the default.
func (a *app) attachTimeout() time.Duration {
	home, _ := os.UserHomeDir()
	paths, err := config.ResolvePaths(config.PathOptions{Getenv: a.getenv, UserHome: home})
	if err != nil {
		return config.DefaultAttachTimeoutSecs * time.Second
	}
	cfg, err := config.Load(paths.ConfigFile, paths.ConfigNamed)
	if err != nil {
		fmt.Fprintf(a.stderr, "myco: the config is not readable, so the attach timeout is the default %ds: %s\n", config.DefaultAttachTimeoutSecs, oneLine(err.Error()))
		return config.DefaultAttachTimeoutSecs * time.Second
	}
	return time.Duration(cfg.AttachTimeoutSecs) * time.Second
}
