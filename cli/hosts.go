package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"myco.dev/hosts"
	"myco.dev/hosts/proto"
)

// HostsOptions are what the hosts commands work with.
type HostsOptions struct {
	// Specs are the remote hosts, as ~/.ssh/config lists them; SSHConfig names that file,
	// for the messages.
	Specs     []hosts.RemoteSpec
	SSHConfig string
	// Remote returns the options of a remote's controller; it is called only for a check
	// or an install.
	Remote func() hosts.RemoteOptions
	// Self is this binary's path, which install copies; Version is what it says of itself.
	Self    string
	Version string
}

// HostsCommand runs `myco hosts` (the hosts found, with the file each came from),
// `myco hosts check ALIAS` (the non-interactive check and the hello handshake) and
// `myco hosts install ALIAS` (copy this binary to ~/.local/bin/myco there); args are what
// follows `hosts`.
func HostsCommand(ctx context.Context, std IO, args []string, o HostsOptions) int {
	if len(args) == 0 {
		fmt.Fprintf(std.Stdout, "%s\tin-process, always ready\n", hosts.Local)
		for _, s := range o.Specs {
			fmt.Fprintf(std.Stdout, "%s\t%s\n", s.Alias, s.Source)
		}
		return ExitOK
	}
	if len(args) != 2 || (args[0] != "check" && args[0] != "install") {
		fmt.Fprintln(std.Stderr, "usage: myco hosts | myco hosts check ALIAS | myco hosts install ALIAS")
		return ExitUsage
	}
	i := slices.IndexFunc(o.Specs, func(s hosts.RemoteSpec) bool { return s.Alias == args[1] })
	if i < 0 {
		fmt.Fprintf(std.Stderr, "myco: no host %q in %s (myco hosts lists them)\n", args[1], o.SSHConfig)
		return ExitError
	}
	r := hosts.NewRemote(o.Specs[i], o.Remote())
	defer r.Close()
	if args[0] == "install" {
		return installHost(ctx, std, r, o)
	}
	return checkHost(ctx, std.Stdout, r)
}

// checkHost prints what `myco hosts check` found.
func checkHost(ctx context.Context, w io.Writer, r *hosts.Remote) int {
	res := r.Check(ctx)
	fmt.Fprintf(w, "check: %s\n", res.Check)
	for _, warning := range res.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
	if res.Path != "" {
		fmt.Fprintf(w, "myco on %s: %s (%s)\n", res.Alias, res.Path, res.Version)
	}
	if len(res.Problems) == 0 {
		printReady(w, res.Alias, res.Hello)
		return ExitOK
	}
	for _, p := range res.Problems {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
	return ExitError
}

func printReady(w io.Writer, alias string, h proto.Hello) {
	fmt.Fprintf(w, "%s is ready: host protocol %d, myco %s, %s/%s, shell %s, directory %s\n",
		alias, h.Protocol, h.Version, h.OS, h.Arch, h.Shell, h.Dir)
	if h.NoDaemon != "" {
		fmt.Fprintf(w, "warning: %s\n", hosts.NoDaemonWarning(h))
	} else if h.Instance != "" {
		fmt.Fprintf(w, "host daemon: pid %d, instance %s; it keeps a dropped connection's bash sessions for %s\n",
			h.PID, h.Instance, time.Duration(h.GraceSecs)*time.Second)
	}
}

// installHost copies the myco binary that runs on the remote's platform (the running one
// when it does: of that platform and static; else a release binary beside it, see
// [hosts.Binaries]) to ~/.local/bin/myco on the remote, then runs the hello handshake with
// the installed binary.
func installHost(ctx context.Context, std IO, r *hosts.Remote, o HostsOptions) int {
	alias := r.Spec().Alias
	goos, goarch, uname, err := r.Platform(ctx)
	if err != nil {
		return Fail(std.Stderr, err)
	}
	bin, err := hosts.PickBinary(hosts.Binaries(o.Self), o.Self, goos, goarch)
	if err != nil {
		return Fail(std.Stderr, fmt.Errorf("%s runs %s/%s (uname -sm: %s): %w", alias, goos, goarch, uname, err))
	}
	f, err := os.Open(bin.Path)
	if err != nil {
		return Fail(std.Stderr, fmt.Errorf("open %s: %w", bin.Path, err))
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Fail(std.Stderr, fmt.Errorf("open %s: %w", bin.Path, err))
	}
	res, err := r.Install(ctx, hosts.InstallOptions{Binary: f, Size: info.Size(), GOOS: bin.GOOS, GOARCH: bin.GOARCH})
	if err != nil {
		return Fail(std.Stderr, err)
	}
	what := "myco " + o.Version
	if bin.Path != o.Self {
		what = bin.Path
	}
	fmt.Fprintf(std.Stdout, "installed %s (%d bytes, %s/%s) to %s on %s (%s)\n", what, info.Size(), bin.GOOS, bin.GOARCH, hosts.InstallPath, alias, res.Platform)
	installed := r.Installed()
	defer installed.Close()
	hello, err := installed.Attach(ctx)
	if err != nil {
		return Fail(std.Stderr, err)
	}
	printReady(std.Stdout, alias, hello)
	if !res.OnPath {
		fmt.Fprintf(std.Stdout, "warning: ~/.local/bin is not on the PATH of a non-interactive ssh session on %s, so myco will not find this binary there yet. Add it where that shell reads it (bash: near the top of ~/.bashrc, before any early return for non-interactive shells; zsh: ~/.zshenv; fish: fish_add_path ~/.local/bin), then run myco hosts check %s\n", alias, alias)
		return ExitError
	}
	return ExitOK
}
