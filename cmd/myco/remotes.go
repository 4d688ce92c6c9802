package main

import (
	"fmt"
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
	specs, err := a.sshRemotes()
	if err != nil {
		return nil, hosts.RemoteOptions{}, err
	}
	return specs, remoteDefaults(p.model.MaxImageBase64Bytes, time.Duration(p.cfg.AttachTimeoutSecs)*time.Second), nil
}

// sshRemotes reads the remote hosts of $HOME/.ssh/config. OpenSSH reads the passwd home's
// config, so when $HOME differs the remotes get -F with the file myco parsed.
func (a *app) sshRemotes() ([]hosts.RemoteSpec, error) {
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
	return hosts.LoadSSHConfig(hosts.SSHConfigOptions{Path: path, Home: home, Default: def})
}

// remoteDefaults are the options of every remote controller.
func remoteDefaults(maxImage int, attach time.Duration) hosts.RemoteOptions {
	dir, _ := os.Getwd()
	return hosts.RemoteOptions{
		MaxImageBase64Bytes: maxImage,
		AttachTimeout:       attach,
		PingInterval:        5 * time.Second,
		Hello:               proto.Hello{Version: version, OS: runtime.GOOS, Arch: runtime.GOARCH, Dir: dir},
	}
}

// hostsCmd runs `myco hosts` (the hosts found, with the file each came from) and
// `myco hosts check ALIAS` (the non-interactive check and the hello handshake).
func (a *app) hostsCmd(args []string) int {
	specs, err := a.sshRemotes()
	if err != nil {
		return a.fail(err)
	}
	switch {
	case len(args) == 0:
		fmt.Fprintf(a.stdout, "%s\tin-process, always ready\n", hosts.Local)
		for _, s := range specs {
			fmt.Fprintf(a.stdout, "%s\t%s\n", s.Alias, s.Source)
		}
		return exitOK
	case len(args) == 2 && args[0] == "check":
		for _, s := range specs {
			if s.Alias != args[1] {
				continue
			}
			ctx, cancel := interruptible()
			defer cancel(nil)
			r := hosts.NewRemote(s, remoteDefaults(5<<20, 10*time.Second))
			defer r.Close()
			res := r.Check(ctx)
			fmt.Fprintf(a.stdout, "check: %s\n", res.Check)
			if res.Path != "" {
				fmt.Fprintf(a.stdout, "myco on %s: %s (%s)\n", s.Alias, res.Path, res.Version)
			}
			if len(res.Problems) == 0 {
				fmt.Fprintf(a.stdout, "%s is ready: host protocol %d, %s/%s, shell %s, directory %s\n",
					s.Alias, res.Hello.Protocol, res.Hello.OS, res.Hello.Arch, res.Hello.Shell, res.Hello.Dir)
				return exitOK
			}
			for _, p := range res.Problems {
				fmt.Fprintf(a.stdout, "problem: %s\n", p)
			}
			return exitError
		}
		fmt.Fprintf(a.stderr, "myco: no host %q in %s/.ssh/config (myco hosts lists them)\n", args[1], a.getenv("HOME"))
		return exitError
	}
	fmt.Fprintln(a.stderr, "usage: myco hosts | myco hosts check ALIAS")
	return exitUsage
}
