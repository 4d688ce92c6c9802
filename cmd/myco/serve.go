package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"myco/handlers"
	"myco/hosts"
	"myco/static"
	"myco/workspace"
)

// defaultAddr is where the server listens unless --addr says otherwise.
const defaultAddr = "127.0.0.1:8080"

// serve runs the browser server (myco with no mode): the selected profile's pages, event
// streams and workspace viewer on a loopback address. The first line on stdout is the URL
// to open. SIGINT, SIGTERM and SIGHUP stop it: running turns are cancelled and saved, the
// tools and host connections released.
func (a *app) serve(o options) int {
	addr := o.addr
	if addr == "" {
		addr = defaultAddr
	}
	if err := loopbackOnly(addr); err != nil {
		fmt.Fprintln(a.stderr, "myco:", err)
		return exitUsage
	}
	p, err := a.setup(o)
	if err != nil {
		return a.fail(err)
	}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return a.fail(fmt.Errorf("listen on %s: %w", addr, err))
	}
	port := handlers.PortOf(ln.Addr())
	// The agents' tools reach this instance's API at MYCO_SERVER_URL (nested sessions).
	p.serverURL = fmt.Sprintf("http://127.0.0.1:%s/profiles/%s", port, p.paths.Profile)
	token := ""
	if !handlers.PeerCredAvailable() {
		// The owner of a connection cannot be told here: the server asks for a secret
		// that only this user can read, carried once in the printed URL (and, for the
		// agents' tools, in MYCO_SERVER_TOKEN).
		if token, err = newToken(filepath.Join(p.paths.Home, "server-"+port+".token")); err != nil {
			return a.fail(err)
		}
		p.serverToken = token
	}
	e, err := a.newEngine(p, false)
	if err != nil {
		return a.fail(err)
	}
	defer e.close()
	files, err := workspace.OpenFiles(p.paths.WorkspaceDir())
	if err != nil {
		return a.fail(err)
	}
	wd, _ := os.Getwd()
	d := handlers.Deps{
		Profile: p.paths.Profile, Sessions: e.mgr, Models: catalogInfo(p), Default: p.model.Key,
		Workspace: files, WorkspaceDir: p.paths.WorkspaceDir(), Dir: wd, Home: p.home,
		Hosts: func() []handlers.HostState { return hostStates(e.harness) }, Assets: static.New("/static/"),
		Port: port, UID: os.Getuid(), Token: token, Log: log,
	}
	url := p.serverURL + "/"
	if token != "" {
		url += "?token=" + token
	}
	if missing := d.Assets.Missing(static.HTMX, static.SSE); len(missing) > 0 {
		log.Warn("the browser assets are missing, so pages do not update live; run make assets and rebuild", "missing", missing)
	}
	srv := &http.Server{Handler: handlers.New(d), ConnContext: handlers.ConnContext, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	fmt.Fprintln(a.stdout, url)
	log.Info("serving", "profile", p.paths.Profile, "model", p.model.Key, "addr", ln.Addr().String())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return a.fail(fmt.Errorf("serve: %w", err))
	case <-ctx.Done():
	}
	stop()
	log.Info("stopping: running turns are cancelled and saved")
	e.mgr.Close() // turns end cancelled and checkpointed; their streams say so
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		srv.Close() // event streams do not end on their own
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("serve", "err", err)
	}
	return exitOK
}

// loopbackOnly refuses an address that is not a loopback one: the server drives an agent
// that runs commands, and is reached from elsewhere through an SSH port-forward.
func loopbackOnly(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: want HOST:PORT, e.g. %s (%v)", addr, defaultAddr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("--addr %q: bad port %q", addr, port)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q is not a loopback address: myco serves only on loopback (127.0.0.1, ::1 or localhost); reach it from another machine through an SSH port-forward (ssh -L 8080:127.0.0.1:8080 HOST)", addr)
	}
	return nil
}

// newToken writes a fresh secret to a file only the user can read and returns it.
func newToken(path string) (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	t := hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(t+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write the server token: %w", err)
	}
	return t, nil
}

// catalogInfo lists the catalog's models for the pages.
func catalogInfo(p *profile) []handlers.ModelInfo {
	var out []handlers.ModelInfo
	for _, key := range p.cfg.ModelKeys() {
		if m, err := p.cfg.Resolve(key); err == nil {
			out = append(out, handlers.ModelInfo{Key: m.Key, ContextWindow: m.ContextWindow, MaxImageBase64Bytes: m.MaxImageBase64Bytes})
		}
	}
	return out
}

// hostStates lists the remote hosts' states for the status bar.
func hostStates(h *hosts.Harness) []handlers.HostState {
	var out []handlers.HostState
	for _, st := range h.Statuses() {
		out = append(out, handlers.HostState{Name: st.Alias, State: string(st.State), Error: st.Err})
	}
	return out
}
