package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"myco.dev/engine"
	"myco.dev/handlers"
	"myco.dev/internal/peercred"
	"myco.dev/internal/web"
	"myco.dev/static"
	"myco.dev/workspace"
)

// localAPI is the profile's JSON API (and pages) that `myco -p` and the chat serve on a
// loopback port of their own while they run, so that their agents' tools have a working
// MYCO_SERVER_URL for nested sessions: the same router and checks as the server's (the
// Host check, the connection's owner, or a token where the owner cannot be told), over
// this process's session service. Children created through it run in this process; when
// it ends, their running turns are stopped and saved like the parent's.
type localAPI struct {
	ln        net.Listener
	srv       *http.Server
	served    chan error
	token     string
	tokenFile string
}

// listenAPI reserves the loopback port of p's API and sets p's serverURL (and, in token
// mode, its tokenFile) for the tools, before the engine builds them. Serve it with serve;
// close it when done.
func (a *app) listenAPI(p *engine.Profile, eo *engine.Options) (*localAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the nested-session API: %w", err)
	}
	api := &localAPI{ln: ln}
	port := web.PortOf(ln.Addr())
	if !peercred.TCPAvailable() {
		// As the server does where a connection's owner cannot be told: a secret that only
		// this user can read, which the tools send from its file (curl -H @FILE).
		api.tokenFile = filepath.Join(p.Paths.Home, "cli-"+port+".token")
		if api.token, err = web.NewTokenFile(api.tokenFile); err != nil {
			ln.Close()
			return nil, err
		}
	}
	eo.ServerURL = "http://" + net.JoinHostPort("127.0.0.1", port) + "/profiles/" + p.Paths.Profile
	eo.TokenFile = api.tokenFile
	return api, nil
}

// serve starts serving e's session service on the reserved port.
func (api *localAPI) serve(a *app, p *engine.Profile, e *engine.Engine) error {
	files, err := workspace.OpenFiles(p.Paths.WorkspaceDir())
	if err != nil {
		return err
	}
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	h := handlers.New(handlers.Deps{
		Profile: p.Paths.Profile, Sessions: e.Sessions, Models: catalogInfo(p), Default: p.Model.Key,
		Workspace: files, WorkspaceDir: p.Paths.WorkspaceDir(), Dir: wd, Home: home,
		Hosts:  func() []handlers.HostState { return hostStates(e.Harness) },
		Assets: static.New("/static/"), Port: web.PortOf(api.ln.Addr()), UID: os.Getuid(), Token: api.token, Log: a.log,
	})
	api.srv = web.NewServer(h, a.log)
	api.served = make(chan error, 1)
	go func() { api.served <- api.srv.Serve(api.ln) }()
	return nil
}

// close stops serving: requests in flight get a moment, event streams are cut.
func (api *localAPI) close(a *app) {
	if api.tokenFile != "" {
		defer os.Remove(api.tokenFile)
	}
	if api.srv == nil {
		api.ln.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := api.srv.Shutdown(ctx); err != nil {
		api.srv.Close()
	}
	if err := <-api.served; err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		a.log.Warn("nested-session API", "err", err)
	}
}
