package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
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
	specs, err := a.sshRemotes()
	if err != nil {
		return nil, hosts.RemoteOptions{}, err
	}
	return specs, remoteDefaults(catalog.LargestImageCap(p.cfg), time.Duration(p.cfg.AttachTimeoutSecs)*time.Second, p.cfg.CredentialVars()), nil
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

// remoteDefaults are the options of every remote controller. The host removes the
// variables withoutEnv names (the model credentials) from its tool processes.
func remoteDefaults(maxImage int, attach time.Duration, withoutEnv []string) hosts.RemoteOptions {
	dir, _ := os.Getwd()
	return hosts.RemoteOptions{
		MaxImageBase64Bytes: maxImage,
		WithoutEnv:          withoutEnv,
		AttachTimeout:       attach,
		PingInterval:        5 * time.Second,
		Hello:               proto.Hello{Version: version, OS: runtime.GOOS, Arch: runtime.GOARCH, Dir: dir},
	}
}

// hostsCmd runs `myco hosts` (the hosts found, with the file each came from),
// `myco hosts check ALIAS` (the non-interactive check and the hello handshake) and
// `myco hosts install ALIAS` (copy this binary to ~/.local/bin/myco there).
func (a *app) hostsCmd(args []string) int {
	specs, err := a.sshRemotes()
	if err != nil {
		return a.fail(err)
	}
	if len(args) == 0 {
		fmt.Fprintf(a.stdout, "%s\tin-process, always ready\n", hosts.Local)
		for _, s := range specs {
			fmt.Fprintf(a.stdout, "%s\t%s\n", s.Alias, s.Source)
		}
		return exitOK
	}
	if len(args) != 2 || (args[0] != "check" && args[0] != "install") {
		fmt.Fprintln(a.stderr, "usage: myco hosts | myco hosts check ALIAS | myco hosts install ALIAS")
		return exitUsage
	}
	i := slices.IndexFunc(specs, func(s hosts.RemoteSpec) bool { return s.Alias == args[1] })
	if i < 0 {
		fmt.Fprintf(a.stderr, "myco: no host %q in %s/.ssh/config (myco hosts lists them)\n", args[1], a.getenv("HOME"))
		return exitError
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer cancel()
	r := hosts.NewRemote(specs[i], remoteDefaults(5<<20, a.attachTimeout(), nil))
	defer r.Close()
	if args[0] == "install" {
		return a.installHost(ctx, r)
	}
	return a.checkHost(ctx, r)
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

// checkHost prints what `myco hosts check` found.
func (a *app) checkHost(ctx context.Context, r *hosts.Remote) int {
	res := r.Check(ctx)
	fmt.Fprintf(a.stdout, "check: %s\n", res.Check)
	for _, w := range res.Warnings {
		fmt.Fprintf(a.stdout, "warning: %s\n", w)
	}
	if res.Path != "" {
		fmt.Fprintf(a.stdout, "myco on %s: %s (%s)\n", res.Alias, res.Path, res.Version)
	}
	if len(res.Problems) == 0 {
		a.printReady(res.Alias, res.Hello)
		return exitOK
	}
	for _, p := range res.Problems {
		fmt.Fprintf(a.stdout, "problem: %s\n", p)
	}
	return exitError
}

func (a *app) printReady(alias string, h proto.Hello) {
	fmt.Fprintf(a.stdout, "%s is ready: host protocol %d, myco %s, %s/%s, shell %s, directory %s\n",
		alias, h.Protocol, h.Version, h.OS, h.Arch, h.Shell, h.Dir)
	if h.NoDaemon != "" {
		fmt.Fprintf(a.stdout, "warning: %s\n", hosts.NoDaemonWarning(h))
	} else if h.Instance != "" {
		fmt.Fprintf(a.stdout, "host daemon: pid %d, instance %s; it keeps a dropped connection's bash sessions for %s\n",
			h.PID, h.Instance, time.Duration(h.GraceSecs)*time.Second)
	}
}

// installHost copies the running binary to ~/.local/bin/myco on the remote, then runs the
// hello handshake with the installed binary.
func (a *app) installHost(ctx context.Context, r *hosts.Remote) int {
	self, err := os.Executable()
	if err != nil {
		return a.fail(fmt.Errorf("find the running myco: %w", err))
	}
	f, err := os.Open(self)
	if err != nil {
		return a.fail(fmt.Errorf("open the running myco: %w", err))
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return a.fail(fmt.Errorf("open the running myco: %w", err))
	}
	alias := r.Spec().Alias
	res, err := r.Install(ctx, hosts.InstallOptions{Binary: f, Size: info.Size(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH})
	if err != nil {
		return a.fail(err)
	}
	fmt.Fprintf(a.stdout, "installed myco %s (%d bytes, %s/%s) to %s on %s (%s)\n", version, info.Size(), runtime.GOOS, runtime.GOARCH, hosts.InstallPath, alias, res.Platform)
	installed := r.Installed()
	defer installed.Close()
	hello, err := installed.Attach(ctx)
	if err != nil {
		return a.fail(err)
	}
	a.printReady(alias, hello)
	if !res.OnPath {
		fmt.Fprintf(a.stdout, "warning: ~/.local/bin is not on the PATH of a non-interactive ssh session on %s, so myco will not find this binary there yet. Add it where that shell reads it (bash: near the top of ~/.bashrc, before any early return for non-interactive shells; zsh: ~/.zshenv; fish: fish_add_path ~/.local/bin), then run myco hosts check %s\n", alias, alias)
		return exitError
	}
	return exitOK
}
