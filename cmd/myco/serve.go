package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/term"

	"myco.dev/config"
	"myco.dev/engine"
	"myco.dev/handlers"
	"myco.dev/profiles"
	"myco.dev/static"
	"myco.dev/workspace"
)

// serve runs the browser server (myco with no mode): the supervisor that owns the loopback
// port and serves every profile of MYCO_HOME at /profiles/NAME/, each through a worker
// process of its own (myco --mode profile-worker); see [profiles.Serve]. --profile names
// the instance / redirects to, which --model and --config apply to. SIGINT, SIGTERM and
// SIGHUP stop it: each worker stops its turns, saves them and releases its tools.
func (a *app) serve(o options) int {
	addr, from := o.addr, "--addr"
	if addr == "" {
		addr, from = a.getenv("MYCO_ADDR"), "MYCO_ADDR"
	}
	if addr == "" {
		addr = profiles.DefaultAddr
	}
	if err := profiles.CheckAddr(from, addr); err != nil {
		fmt.Fprintln(a.stderr, "myco:", err)
		return exitUsage
	}
	if o.auth != "" && o.auth != "owner" && o.auth != "token" {
		fmt.Fprintf(a.stderr, "myco: --auth %q: want owner or token\n", o.auth)
		return exitUsage
	}
	paths, err := a.paths(o)
	if err != nil {
		return a.fail(err)
	}
	// The workers run this binary, the one running, whatever has replaced its path since
	// (an upgrade): /proc/self/exe names it on Linux. Elsewhere the path is what there is;
	// the build each worker reports when ready is checked against this one.
	exe := "/proc/self/exe"
	if runtime.GOOS != "linux" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return a.fail(fmt.Errorf("find the running myco: %w", err))
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	var hint io.Writer // the port-forward's sentence, but not among JSON log lines
	approve := ""      // the approval link, told only to a person at a terminal
	if !a.logs.JSON() {
		hint = a.stderr
		if f, ok := a.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			approve, _ = engine.ApprovalKey(paths.Home) // without it, `myco approve-link` says why
		}
	}
	err = profiles.Serve(ctx, profiles.ServeOptions{
		Addr: addr, Home: paths.Home, Launch: paths.Profile, Auth: o.auth,
		Worker:  func(name string) []string { return workerCommand(exe, o, paths, name) },
		Environ: os.Environ(),
		Version: buildInfo().String(), Build: buildInfo().ID, Pprof: o.pprof,
		Stdout: a.stdout, Stderr: a.stderr, LogJSON: a.logs.JSON(), Hint: hint, ApproveKey: approve, Log: a.log,
	})
	if errors.Is(err, syscall.EADDRINUSE) {
		fmt.Fprintln(a.stderr, "myco:", engine.PortTaken(addr))
	}
	if err != nil {
		return a.fail(err)
	}
	return exitOK
}

// workerCommand is the command line of profile name's worker: the same binary, with the
// log flags. The launch overrides (--model, --config) go to the launch profile's worker
// only.
func workerCommand(exe string, o options, paths config.Paths, name string) []string {
	argv := append([]string{exe, "--mode", "profile-worker", "--profile", name}, logArgs(o)...)
	if o.pprof {
		argv = append(argv, "--pprof")
	}
	launch := name == paths.Profile
	if launch && o.model != "" {
		argv = append(argv, "--model", o.model)
	}
	if launch && paths.ConfigNamed {
		argv = append(argv, "--config", paths.ConfigFile)
	}
	return argv
}

// deps are the handlers' deps of the profile at paths, served by this process on port,
// token when set guarding it: its pages, workspace and API, without a session service
// yet.
func (a *app) deps(paths config.Paths, port, token string) (handlers.Deps, error) {
	files, err := workspace.OpenFiles(paths.WorkspaceDir())
	if err != nil {
		return handlers.Deps{}, err
	}
	home, _ := os.UserHomeDir()
	wd, _ := os.Getwd()
	key, err := engine.ApprovalKey(paths.Home)
	if err != nil {
		return handlers.Deps{}, err
	}
	return handlers.Deps{Profile: paths.Profile, Workspace: files, WorkspaceDir: paths.WorkspaceDir(), Dir: wd, Home: home, MycoHome: paths.Home,
		Assets: static.New("/static/"), Port: port, UID: os.Getuid(), Token: token, ApprovalKey: key, Log: a.log}, nil
}

// withEngine is d serving the session service of p's engine e, its models and its hosts.
func withEngine(d handlers.Deps, p *engine.Profile, e *engine.Engine) handlers.Deps {
	d.Sessions, d.Default = e.Sessions, p.Model.Key
	for _, m := range p.Models() {
		d.Models = append(d.Models, handlers.ModelInfo{Key: m.Key, Protocol: m.Protocol, ContextWindow: m.ContextWindow,
			MaxImageBase64Bytes: m.MaxImageBase64Bytes, AutoCompactAt: m.AutoCompactAt})
	}
	d.Project = e.Harness.Project
	d.ApproveProject = func(dir, sum string) error {
		_, err := e.ApproveProject(dir, sum)
		return err
	}
	d.Hosts = func() []handlers.HostState {
		var out []handlers.HostState
		for _, st := range e.Harness.Statuses() {
			out = append(out, handlers.HostState{Name: st.Alias, State: string(st.State), Error: st.Err})
		}
		return out
	}
	return d
}
