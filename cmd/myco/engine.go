package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"

	"myco.dev/docs"
	"myco.dev/hosts"
	"myco.dev/hosts/mcp"
	"myco.dev/hosts/tools"
	"myco.dev/internal/reaper"
	"myco.dev/sessions"
	"myco.dev/sessions/catalog"
	"myco.dev/workspace"
	"myco.dev/workspace/preludetool"
)

// engine is one profile's session service and what it runs on: the host harness shared
// by every session (local tools in-process, lazy remotes), the root-only tools and the
// model catalog.
type engine struct {
	mgr     *sessions.Manager
	harness *hosts.Harness
	std     []tools.Tool
	mcp     *mcp.Set // the local MCP servers
	reaper  *reaper.Reaper
}

// newEngine builds the session service of profile p. wait makes jobs wait for another
// process that works on the same session (the terminal modes); the server refuses instead.
func (a *app) newEngine(p *profile, wait bool) (*engine, error) {
	reg := &sessions.Registry{}
	rp := newReaper(a.log)
	std := catalog.LocalTools(catalog.LocalOptions{Paths: p.paths, Config: p.cfg, Env: os.Environ(), Reaper: rp,
		ServerURL: p.serverURL, TokenFile: p.tokenFile})
	remotes, ro, err := p.remotes()
	if err != nil {
		closeTools(std)
		rp.Close()
		return nil, err
	}
	e := &engine{std: std, reaper: rp}
	ro.OnState = func(st hosts.Status) {
		if e.mgr != nil {
			e.mgr.Publish(hostUpdate(st))
		}
	}
	prelude := preludetool.New(&workspace.Prelude{Dir: p.paths.PreludeDir(), Max: p.cfg.MaxPreludeBytes})
	mo, err := a.mcpOptions(p, remotes, rp)
	if err != nil {
		e.closeTools()
		return nil, err
	}
	mo.Tools, mo.Root = std, []tools.Tool{sessions.NewHistoryTool(reg), sessions.NewMetaTool(reg), prelude}
	mo.Remotes, mo.Remote = remotes, ro
	e.mcp = mo.MCP
	if e.harness, err = hosts.NewHarness(mo); err != nil {
		e.closeTools()
		return nil, fmt.Errorf("build the harness: %w", err)
	}
	wd, _ := os.Getwd()
	e.mgr, err = sessions.NewManager(sessions.ManagerOptions{
		Store:    sessions.NewStore(p.paths.SessionDir()),
		Models:   catalog.New(catalog.Options{Config: p.cfg, Default: p.model.Key, Env: p.env, Home: p.home, Tools: e.harness}),
		Tools:    toolHost{e.harness},
		Registry: reg,
		Wait:     wait,
		Log:      a.log,
		Dir:      wd,
		Prompt: catalog.Prompt(catalog.PromptOptions{Paths: p.paths, MaxPreludeBytes: p.cfg.MaxPreludeBytes, Manual: docs.FS,
			Warn: a.warn, Config: p.cfg, Tools: e.harness}),
	})
	if err != nil {
		e.harness.Close()
		e.closeTools()
		return nil, err
	}
	return e, nil
}

// mcpOptions checks that every MCP server's host is one of remotes (an unknown host is a
// startup error naming the file, the line and the key) and returns the harness options
// of the profile's MCP servers: the local ones in a Set whose processes die with rp's
// process, the remote ones, the disabled ones. The caller closes the Set.
func (a *app) mcpOptions(p *profile, remotes []hosts.RemoteSpec, rp tools.Reaper) (hosts.Options, error) {
	var aliases []string
	for _, r := range remotes {
		aliases = append(aliases, r.Alias)
	}
	if err := p.cfg.CheckMCPHosts(aliases); err != nil {
		return hosts.Options{}, err
	}
	servers := catalog.MCP(catalog.MCPOptions{Config: p.cfg, Env: p.env, Home: p.home})
	set, err := mcp.New(mcp.Options{Servers: servers.Local, LookupEnv: os.LookupEnv, Reaper: rp, Version: version, Log: a.log})
	if err != nil {
		return hosts.Options{}, err
	}
	return hosts.Options{MCP: set, RemoteMCP: servers.Remote, MCPDisabled: servers.Disabled, Log: a.log}, nil
}

// close stops every job (turns end cancelled and checkpointed), releases every session's
// tools and ends the remote connections and local processes.
func (e *engine) close() {
	e.mgr.Close()
	e.harness.Close()
	e.closeTools()
}

// closeTools ends the local tools' processes, the local MCP servers and the reaper.
func (e *engine) closeTools() {
	closeTools(e.std)
	if e.mcp != nil {
		e.mcp.Close()
	}
	e.reaper.Close()
}

// closeTools closes the tools of ts that keep processes.
func closeTools(ts []tools.Tool) {
	for _, t := range ts {
		if c, ok := t.(interface{ Close() }); ok {
			c.Close()
		}
	}
}

// newReaper returns this process's reaper: myco itself in its reaper mode, started before
// the first tool process, which kills every tool process group still running when this
// process dies, however it dies.
// A reaper that cannot start is logged on log: the tools then run unprotected.
func newReaper(log *slog.Logger) *reaper.Reaper {
	path := "/proc/self/exe" // this binary, even after an upgrade replaced its file
	if runtime.GOOS != "linux" {
		path, _ = os.Executable()
	}
	return reaper.New(reaper.Options{Path: path, Argv: []string{os.Args[0], "--mode", "reaper"}, Log: log})
}

// hostUpdate is a remote host's state change as a profile-wide update.
func hostUpdate(st hosts.Status) sessions.Update {
	u := sessions.Update{Type: sessions.UpdateHost, Host: st.Alias, State: string(st.State), Error: st.Err, Attaches: st.Attaches}
	if st.State == hosts.StateAttached && st.Attaches == 1 {
		u.Text = fmt.Sprintf("myco %s, %s/%s", st.Hello.Version, st.Hello.OS, st.Hello.Arch)
	}
	if st.State == hosts.StateAttached && st.Warning != "" {
		u.Text = strings.TrimPrefix(u.Text+"; "+st.Warning, "; ")
	}
	return u
}

// toolHost gives each session runtime its executor on the shared harness, ends an owner's
// resources when its session closes, and lists them for the runtime facts.
type toolHost struct{ h *hosts.Harness }

var (
	_ sessions.Releaser    = toolHost{}
	_ sessions.Inventorier = toolHost{}
)

func (t toolHost) Tools(owner string) sessions.Tools { return t.h.For(owner) }
func (t toolHost) Release(owner string)              { t.h.Release(owner) }

// Inventory lists owner's bash sessions, editor read stamps and MCP servers on every host. A remote
// that is not attached, or does not answer, is listed with its last-known handles, marked
// as such; it is never connected for this.
func (t toolHost) Inventory(ctx context.Context, owner string) (sessions.Inventory, error) {
	var out sessions.Inventory
	for _, inv := range t.h.Inventory(ctx, owner) {
		out = append(out, sessions.HostHandles{Host: inv.Host, Bash: inv.Resources.Bash, Stamps: inv.Resources.Editor, MCP: inv.Resources.MCP,
			LastKnown: inv.LastKnown, Err: inv.Err})
	}
	return out, nil
}
