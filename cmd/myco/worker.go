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
	"sync"
	"syscall"
	"time"

	"myco.dev/config"
	"myco.dev/handlers"
	"myco.dev/internal/handoff"
	"myco.dev/internal/peercred"
	"myco.dev/internal/web"
	"myco.dev/profiles"
	"myco.dev/sessions"
	"myco.dev/static"
	"myco.dev/workspace"
)

// profileWorker runs myco --mode profile-worker: one profile's pages, API and sessions,
// served over the channel its supervisor (the server that owns the port) passes it as
// descriptor 3, which hands it connections and dials it (see package handoff). It prints "ready" on stdout once it serves. When its stdin closes
// (the supervisor stops it, or died) or on SIGTERM, it stops its sessions' work, saves it,
// releases the tools and exits; SIGPIPE is ignored, so that its log to a supervisor that
// died cannot kill it first. A profile whose config cannot be loaded is served without
// models (see [workerHandler]) until the config is fixed; one whose paths cannot be used
// fails before "ready", with the error on stderr, which the supervisor shows on the
// profile's pages.
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
		if token, err = readToken(tokenFile); err != nil {
			return a.fail(err)
		}
	}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	home, _ := os.UserHomeDir()
	paths, err := config.ResolvePaths(config.PathOptions{ProfileFlag: o.profile, ProfileSet: o.profileSet, ConfigFlag: o.config,
		Getenv: a.getenv, UserHome: home})
	if err != nil {
		return a.fail(err)
	}
	files, err := workspace.OpenFiles(paths.WorkspaceDir())
	if err != nil {
		return a.fail(err)
	}
	wd, _ := os.Getwd()
	base := handlers.Deps{
		Profile: paths.Profile, Workspace: files, WorkspaceDir: paths.WorkspaceDir(), Dir: wd, Home: home,
		Assets:   static.New("/static/"),
		Profiles: func() []string { return listProfiles(paths.Home) },
		Port:     u.Port(), UID: os.Getuid(), Token: token, Worker: true, Log: log,
	}
	h := &workerHandler{a: a, o: o, base: base, serverURL: serverURL, tokenFile: tokenFile, paths: paths, log: log}
	if err := h.load(); err != nil {
		return a.fail(err)
	}
	defer h.close()
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
	h.stop()
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

// workerHandler is a profile worker's handler: the profile's server, built from its config;
// or, while that config cannot be loaded, a server without models that shows the error on
// every page, keeps the sessions and the workspace readable and refuses what needs a model
// (config_invalid), and that loads the config again once its file changed, at most once a
// second, to become the full server without a restart.
type workerHandler struct {
	a                    *app
	o                    options
	base                 handlers.Deps // the Deps that do not depend on the config
	serverURL, tokenFile string
	paths                config.Paths // the config file is watched while it is invalid
	log                  *slog.Logger

	mu      sync.Mutex // guards the fields below
	h       http.Handler
	engine  *engine           // nil while the config is invalid
	broken  *sessions.Manager // the session service without models, while it is invalid
	failed  time.Time         // when the config was last found invalid; zero once valid
	checked time.Time
	file    os.FileInfo // the config file as it was when it failed
	stopped bool
}

// load builds the server from the profile's config, or, when the config is invalid, the
// server without models. Only what no server can start without is an error.
func (w *workerHandler) load() error {
	p, cfgErr := w.a.setup(w.o)
	w.mu.Lock()
	defer w.mu.Unlock()
	if cfgErr != nil {
		if w.broken == nil {
			// The profile's directories, made and checked as for any start: another user's
			// directory is refused, whatever the config says.
			if err := w.paths.Ensure(); err != nil {
				return err
			}
			store := sessions.NewStore(w.paths.SessionDir())
			m, err := sessions.NewManager(sessions.ManagerOptions{Store: store, Models: brokenCatalog{cfgErr}, Log: w.log})
			if err != nil {
				return err
			}
			w.broken = m
		}
		w.log.Warn("the profile's config is invalid: serving its sessions and workspace read-only until it is fixed", "err", cfgErr)
		d := w.base
		d.Sessions, d.ConfigError = w.broken, cfgErr.Error()
		w.h, w.failed, w.checked = handlers.New(d), time.Now(), time.Now()
		w.file, _ = os.Stat(w.paths.ConfigFile)
		return nil
	}
	p.serverURL, p.tokenFile = w.serverURL, w.tokenFile
	e, err := w.a.newEngine(p, false)
	if err != nil {
		return err
	}
	d := w.base
	d.Sessions, d.Models, d.Default = e.mgr, catalogInfo(p), p.model.Key
	d.Hosts = func() []handlers.HostState { return hostStates(e.harness) }
	w.h, w.engine, w.failed = handlers.New(d), e, time.Time{}
	if w.broken != nil {
		w.broken.Close()
		w.broken = nil
	}
	return nil
}

// ServeHTTP serves r; while the config is invalid it first loads it again when its file
// changed.
func (w *workerHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	retry := !w.failed.IsZero() && !w.stopped && time.Since(w.checked) >= time.Second
	if retry {
		w.checked = time.Now()
		st, err := os.Stat(w.paths.ConfigFile)
		retry = err == nil && (w.file == nil || !os.SameFile(st, w.file) || !st.ModTime().Equal(w.file.ModTime()) || st.Size() != w.file.Size())
	}
	w.mu.Unlock()
	if retry {
		if err := w.load(); err != nil {
			w.log.Error("the profile's config was fixed, but its server did not start", "err", err)
		}
	}
	w.mu.Lock()
	h := w.h
	w.mu.Unlock()
	h.ServeHTTP(rw, r)
}

// stop stops the sessions' work (turns end cancelled and saved); close then releases the
// rest.
func (w *workerHandler) stop() {
	w.mu.Lock()
	w.stopped = true
	e, b := w.engine, w.broken
	w.mu.Unlock()
	if e != nil {
		e.mgr.Close()
	}
	if b != nil {
		b.Close()
	}
}

func (w *workerHandler) close() {
	w.mu.Lock()
	e := w.engine
	w.mu.Unlock()
	if e != nil {
		e.close()
	}
}

// brokenCatalog is the model catalog of a profile whose config is invalid: it has no model.
type brokenCatalog struct{ err error }

func (brokenCatalog) Default() string { return "" }
func (c brokenCatalog) Agent(string, []string) (sessions.AgentConfig, error) {
	return sessions.AgentConfig{}, fmt.Errorf("the profile's config is invalid: %w", c.err)
}
