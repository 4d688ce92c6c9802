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
	"myco.dev/profiles"
	"myco.dev/static"
	"myco.dev/workspace"
)

// profileWorker runs myco --mode profile-worker: one profile's pages, API and sessions,
// served on the private Unix socket --socket for the supervisor (the server that owns the
// port) to forward to. It prints "ready" on stdout once it serves. When its stdin closes
// (the supervisor stops it, or died) or on SIGTERM, it stops its sessions' work, saves it,
// releases the tools and exits. A profile whose config cannot be loaded fails before
// "ready", with the error on stderr, which the supervisor shows on the profile's pages.
func (a *app) profileWorker(o options) int {
	if o.socket == "" {
		fmt.Fprintln(a.stderr, "myco: --mode profile-worker needs --socket PATH")
		return exitUsage
	}
	p, err := a.setup(o)
	if err != nil {
		return a.fail(err)
	}
	// The supervisor sets the instance's URL once, for the pages' checks and the tools.
	p.serverURL, p.serverToken = a.getenv("MYCO_SERVER_URL"), a.getenv("MYCO_SERVER_TOKEN")
	u, err := url.Parse(p.serverURL)
	if err != nil || u.Port() == "" {
		return a.fail(fmt.Errorf("MYCO_SERVER_URL %q is not this instance's http://127.0.0.1:PORT/profiles/%s URL", p.serverURL, p.paths.Profile))
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
	os.Remove(o.socket)
	ln, err := net.Listen("unix", o.socket)
	if err != nil {
		return a.fail(fmt.Errorf("listen on %s: %w", o.socket, err))
	}
	os.Chmod(o.socket, 0o600)
	defer os.Remove(o.socket)
	// The supervisor hands whole connections here (their first request read), so that a
	// page costs no second hop; it forwards the rest to o.socket.
	hpath := profiles.HandoffPath(o.socket)
	os.Remove(hpath)
	handed, err := handoff.Listen(hpath)
	if err != nil {
		return a.fail(fmt.Errorf("listen on %s: %w", hpath, err))
	}
	defer os.Remove(hpath)
	wd, _ := os.Getwd()
	d := handlers.Deps{
		Profile: p.paths.Profile, Sessions: e.mgr, Models: catalogInfo(p), Default: p.model.Key,
		Workspace: files, WorkspaceDir: p.paths.WorkspaceDir(), Dir: wd, Home: p.home,
		Hosts: func() []handlers.HostState { return hostStates(e.harness) }, Assets: static.New("/static/"),
		Profiles: func() []string { return listProfiles(p.paths.Home) },
		Port:     u.Port(), UID: os.Getuid(), Token: p.serverToken, Worker: true, Log: log,
	}
	srv := &http.Server{Handler: handlers.New(d), ConnContext: handlers.ConnContext, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	served := make(chan error, 2)
	go func() { served <- srv.Serve(ln) }()
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
	}
	log.Info("stopping: running turns are cancelled and saved", "profile", p.paths.Profile)
	e.mgr.Close()
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		srv.Close()
	}
	for range 2 {
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			log.Warn("serve", "err", err)
		}
	}
	return exitOK
}
