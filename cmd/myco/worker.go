package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"myco.dev/handlers"
	"myco.dev/internal/handoff"
	"myco.dev/internal/peercred"
	"myco.dev/internal/web"
	"myco.dev/profiles"
	"myco.dev/static"
	"myco.dev/workspace"
)

// profileWorker runs myco --mode profile-worker: one profile's pages, API and sessions,
// served over the channel its supervisor (the server that owns the port) passes it as
// descriptor 3, which hands it connections and dials it (see package handoff). It prints "ready" on stdout once it serves. When its stdin closes
// (the supervisor stops it, or died) or on SIGTERM, it stops its sessions' work, saves it,
// releases the tools and exits; SIGPIPE is ignored, so that its log to a supervisor that
// died cannot kill it first. A profile whose config cannot be loaded fails before
// "ready", with the error on stderr, which the supervisor shows on the profile's pages.
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
	p, err := a.setup(o)
	if err != nil {
		return a.fail(err)
	}
	// The supervisor sets the instance's URL once, for the pages' checks and the tools.
	p.serverURL, p.tokenFile = a.getenv("MYCO_SERVER_URL"), a.getenv("MYCO_SERVER_TOKEN_FILE")
	u, err := url.Parse(p.serverURL)
	if err != nil || u.Port() == "" {
		return a.fail(fmt.Errorf("MYCO_SERVER_URL %q is not this instance's http://127.0.0.1:PORT/profiles/%s URL", p.serverURL, p.paths.Profile))
	}
	token := ""
	if p.tokenFile != "" {
		if token, err = readToken(p.tokenFile); err != nil {
			return a.fail(err)
		}
	}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	e, err := a.newEngine(p, false)
	if err != nil {
		return a.fail(err)
	}
	defer e.close()
	files, err := workspace.OpenFiles(p.paths.WorkspaceDir())
	if err != nil {
		return a.fail(err)
	}
	// The supervisor hands whole connections here (their first request read), so that a
	// page costs no second hop, and dials over the same channel for what it forwards.
	handed := handoff.Listen(ch)
	wd, _ := os.Getwd()
	d := handlers.Deps{
		Profile: p.paths.Profile, Sessions: e.mgr, Models: catalogInfo(p), Default: p.model.Key,
		Workspace: files, WorkspaceDir: p.paths.WorkspaceDir(), Dir: wd, Home: p.home,
		Hosts: func() []handlers.HostState { return hostStates(e.harness) }, Assets: static.New("/static/"),
		Profiles: func() []string { return listProfiles(p.paths.Home) },
		Port:     u.Port(), UID: os.Getuid(), Token: token, Worker: true, Log: log,
	}
	srv := web.NewServer(handlers.New(d), log)
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
	log.Info("stopping: running turns are cancelled and saved", "profile", p.paths.Profile)
	e.mgr.Close()
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
