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
		return nil, err
	}
	e := &engine{std: std, reaper: rp}
	ro.OnState = func(st hosts.Status) {
		if e.mgr != nil {
			e.mgr.Publish(hostUpdate(st))
		}
	}
	prelude := preludetool.New(&workspace.Prelude{Dir: p.paths.PreludeDir(), Max: p.cfg.MaxPreludeBytes})
	e.harness, err = hosts.NewHarness(hosts.Options{Tools: std, Root: []tools.Tool{sessions.NewHistoryTool(reg), sessions.NewMetaTool(reg), prelude},
		Remotes: remotes, Remote: ro, Log: a.log})
	if err != nil {
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
		Prompt: catalog.Prompt(catalog.PromptOptions{Paths: p.paths, MaxPreludeBytes: p.cfg.MaxPreludeBytes, Manual: docs.FS,
			Dir: wd, Warn: a.warn}),
	})
	if err != nil {
		e.harness.Close()
		return nil, err
	}
	return e, nil
}

// close stops every job (turns end cancelled and checkpointed), releases every session's
// tools and ends the remote connections and local processes.
func (e *engine) close() {
	e.mgr.Close()
	e.harness.Close()
	for _, t := range e.std {
		if c, ok := t.(interface{ Close() }); ok {
			c.Close()
		}
	}
	e.reaper.Close()
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

// Inventory lists owner's bash sessions and editor read stamps on every host. A remote
// that is not attached, or does not answer, is listed with its last-known handles, marked
// as such; it is never connected for this.
func (t toolHost) Inventory(ctx context.Context, owner string) (sessions.Inventory, error) {
	var out sessions.Inventory
	for _, inv := range t.h.Inventory(ctx, owner) {
		out = append(out, sessions.HostHandles{Host: inv.Host, Bash: inv.Resources.Bash, Stamps: inv.Resources.Editor, LastKnown: inv.LastKnown, Err: inv.Err})
	}
	return out, nil
}
