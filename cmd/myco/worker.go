package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"myco.dev/engine"
	"myco.dev/handlers"
	"myco.dev/hosts/sandbox"
	"myco.dev/profiles"
	"myco.dev/search"
)

// profileWorker runs myco --mode profile-worker: one profile's pages, API and sessions,
// served over the channel its supervisor (the server that owns the port) passes it (see
// [profiles.ServeWorker]). When its stdin closes (the supervisor stops it, or died) or on
// SIGTERM, it stops its sessions' work, saves it, releases the tools and exits;
// SIGPIPE is ignored, so that its log to a supervisor that died cannot kill it first. A
// profile whose config cannot be loaded is served without models (see
// [handlers.Reloader]) until the config is fixed; one whose paths cannot be used fails
// before "ready", with the error on stderr, which the supervisor shows on its pages.
func (a *app) profileWorker(o options) int {
	// The log goes to the supervisor's pipe: when the supervisor died, a write there must
	// be an error (EPIPE), not a SIGPIPE that kills this process before it saved its turns.
	signal.Ignore(syscall.SIGPIPE)
	ch, err := profiles.WorkerChannel()
	if err != nil {
		return a.fail(err)
	}
	srv, err := profiles.WorkerServer(a.getenv)
	if err != nil {
		return a.fail(err)
	}
	paths, err := a.paths(o)
	if err != nil {
		return a.fail(err)
	}
	// Each line names the profile: the supervisor passes its workers' lines on as they are,
	// so that a JSON log stays one object a line.
	a.setLog(a.log.With("profile", paths.Profile))
	log := a.log
	base, err := a.deps(paths, srv.Port, srv.Token)
	if err != nil {
		return a.fail(err)
	}
	base.Profiles = func() []string { return profiles.List(paths.Home) }
	base.Worker, base.Pprof, base.Build = true, o.pprof, buildInfo()
	// The worker's metrics, for its whole life: the engines a changed config builds count
	// into them in turn, and the supervisor gathers them at its /metrics.
	met := engine.NewMetrics(paths.Profile)
	base.Metrics, base.Streams = met.Registry, met.Streams
	h, err := handlers.NewReloader(handlers.ReloaderOptions{
		Load: func() (handlers.Built, error, error) {
			p, cfgErr := a.setup(o)
			if cfgErr != nil {
				return handlers.Built{}, cfgErr, nil
			}
			e, err := engine.New(p, engine.Options{Reaper: newReaper(log), ServerURL: srv.URL, TokenFile: srv.TokenFile, Metrics: met, Log: log,
				Guard: &engine.GuardOptions{Exe: sandbox.FenceExe()}})
			if err != nil {
				return handlers.Built{}, nil, err
			}
			ix, stopSearch := search.Start(filepath.Join(paths.ProfileDir, "search.db"), e.Sessions, log)
			withSearch := func(d handlers.Deps) handlers.Deps {
				if ix != nil {
					d.Search = ix
				}
				return d
			}
			return handlers.Built{Deps: withSearch(withEngine(base, p, e)), Stop: e.Sessions.Close, Close: func() { stopSearch(); e.Close() },
				Holding: func() (bool, []string) {
					return e.Sessions.Running(), e.Sessions.HoldingProcesses(context.Background())
				},
				// A changed config is applied to this engine as far as it can be without
				// ending its tools (see engine.Engine.Apply).
				Apply: func() (handlers.Deps, []string, error) {
					p, cfgErr := a.setup(o)
					if cfgErr != nil {
						return handlers.Deps{}, nil, cfgErr
					}
					pending := e.Apply(p)
					return withSearch(withEngine(base, p, e)), pending, nil
				}}, nil, nil
		},
		Degraded: func(cfgErr error) (handlers.Built, error) {
			m, err := engine.Degraded(paths, base.Dir, cfgErr, log)
			if err != nil {
				return handlers.Built{}, err
			}
			d := base
			d.Sessions = m
			return handlers.Built{Deps: d, Stop: m.Close}, nil
		},
		ConfigFile: paths.ConfigFile, Log: log,
	})
	if err != nil {
		return a.fail(err)
	}
	defer h.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	err = profiles.ServeWorker(ctx, ch, profiles.WorkerOptions{Profile: paths.Profile, Build: buildInfo().ID, Handler: h, Stop: h.Stop,
		Stdin: a.stdin, Stdout: a.stdout, Log: log})
	if err != nil {
		return a.fail(err)
	}
	return exitOK
}
