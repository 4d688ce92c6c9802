package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"myco.dev/engine"
	"myco.dev/handlers"
	"myco.dev/internal/handoff"
	"myco.dev/internal/peercred"
	"myco.dev/internal/web"
	"myco.dev/profiles"
)

// profileWorker runs myco --mode profile-worker: one profile's pages, API and sessions,
// served over the channel its supervisor (the server that owns the port) passes it as
// descriptor 3, which hands it connections and dials it (see package handoff). It prints
// "ready" on stdout once it serves. When its stdin closes (the supervisor stops it, or
// died) or on SIGTERM, it stops its sessions' work, saves it, releases the tools and exits;
// SIGPIPE is ignored, so that its log to a supervisor that died cannot kill it first. A
// profile whose config cannot be loaded is served without models (see
// [handlers.Reloader]) until the config is fixed; one whose paths cannot be used fails
// before "ready", with the error on stderr, which the supervisor shows on its pages.
func (a *app) profileWorker(o options) int {
	// The log goes to the supervisor's pipe: when the supervisor died, a write there must
	// be an error (EPIPE), not a SIGPIPE that kills this process before it saved its turns.
	signal.Ignore(syscall.SIGPIPE)
	// The supervisor's end of the channel: inherited, with no name to connect to. It is
	// checked to come from the process that started this one, as it must.
	ch, err := handoff.Inherit(profiles.WorkerFD)
	if err != nil {
		return a.fail(fmt.Errorf("--mode profile-worker is started by myco's server, which passes it a channel on descriptor %d: %w", profiles.WorkerFD, err))
	}
	if err := peercred.CheckUnix(ch, os.Getuid(), os.Getppid()); err != nil && !errors.Is(err, peercred.ErrUnavailable) {
		ch.Close()
		return a.fail(fmt.Errorf("the channel on descriptor %d is not from the server that started this worker: %w", profiles.WorkerFD, err))
	}
	// The supervisor sets the instance's URL once, for the pages' checks and the tools.
	serverURL, tokenFile := a.getenv("MYCO_SERVER_URL"), a.getenv("MYCO_SERVER_TOKEN_FILE")
	u, err := url.Parse(serverURL)
	if err != nil || u.Port() == "" {
		return a.fail(fmt.Errorf("MYCO_SERVER_URL %q is not this instance's http://127.0.0.1:PORT/profiles/NAME URL", serverURL))
	}
	token := ""
	if tokenFile != "" {
		if token, err = web.ReadTokenFile(tokenFile); err != nil {
			return a.fail(err)
		}
	}
	log := a.log
	paths, err := a.paths(o)
	if err != nil {
		return a.fail(err)
	}
	base, err := a.deps(paths, u.Port(), token)
	if err != nil {
		return a.fail(err)
	}
	base.Profiles = func() []string { return profiles.List(paths.Home) }
	base.Worker, base.Pprof, base.Build = true, o.pprof, buildInfo()
	h, err := handlers.NewReloader(handlers.ReloaderOptions{
		Load: func() (handlers.Built, error, error) {
			p, cfgErr := a.setup(o)
			if cfgErr != nil {
				return handlers.Built{}, cfgErr, nil
			}
			e, err := engine.New(p, engine.Options{Reaper: newReaper(log), ServerURL: serverURL, TokenFile: tokenFile, Log: log})
			if err != nil {
				return handlers.Built{}, nil, err
			}
			return handlers.Built{Deps: withEngine(base, p, e), Busy: e.Sessions.Running, Stop: e.Sessions.Close, Close: e.Close}, nil, nil
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
	// The supervisor hands whole connections here (their first request read), so that a
	// page costs no second hop, and dials over the same channel for what it forwards.
	handed := handoff.Listen(ch)
	srv := web.NewServer(h, log)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(handed) }()
	fmt.Fprintln(a.stdout, "ready")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, a.stdin)
		close(eof)
	}()
	select {
	case err := <-served:
		return a.fail(fmt.Errorf("serve: %w", err))
	case <-ctx.Done():
	case <-eof:
	case <-handed.Done(): // the supervisor is gone
	}
	log.Info("stopping: running turns are cancelled and saved", "profile", paths.Profile)
	h.Stop()
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		log.Warn("serve", "err", err)
	}
	return exitOK
}
