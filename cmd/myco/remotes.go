package main

import (
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"time"

	"myco/hosts"
	"myco/hosts/proto"
)

// remoteOptions builds the harness options for the remotes of ~/.ssh/config: lazy ssh
// workers spawned with the selected model's image cap and the config's attach timeout.
func (a *app) remoteOptions(p *profile) ([]hosts.RemoteSpec, hosts.RemoteOptions, error) {
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
	if err != nil {
		return nil, hosts.RemoteOptions{}, err
	}
	dir, _ := os.Getwd()
	ro := hosts.RemoteOptions{
		MaxImageBase64Bytes: p.model.MaxImageBase64Bytes,
		AttachTimeout:       time.Duration(p.cfg.AttachTimeoutSecs) * time.Second,
		PingInterval:        5 * time.Second,
		Hello:               proto.Hello{Version: version, OS: runtime.GOOS, Arch: runtime.GOARCH, Dir: dir},
	}
	return specs, ro, nil
}
