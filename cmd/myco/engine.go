package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/config"
	"myco.dev/hosts"
	"myco.dev/hosts/tools"
	"myco.dev/internal/reaper"
	"myco.dev/sessions"
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
	rp := newReaper(slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	std := hostTools(p, rp)
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
		Remotes: remotes, Remote: ro})
	if err != nil {
		return nil, fmt.Errorf("build the harness: %w", err)
	}
	e.mgr, err = sessions.NewManager(sessions.ManagerOptions{
		Store:    sessions.NewStore(p.paths.SessionDir()),
		Models:   &catalog{p: p, harness: e.harness},
		Tools:    toolHost{e.harness},
		Registry: reg,
		Wait:     wait,
		Prompt: func() ([]string, sessions.PreludeWatcher, error) {
			watcher := (&workspace.Prelude{Dir: p.paths.PreludeDir(), Max: p.cfg.MaxPreludeBytes}).Watcher()
			snap, err := watcher.Prompt()
			if err != nil {
				return nil, nil, err
			}
			return promptBlocks(p.paths, snap, a.warn), watcher, nil
		},
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
	closeTools(e.std)
	e.reaper.Close()
}

// closeTools ends the processes of the tools that keep any.
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

// catalog resolves the config's model keys into agent configurations, with one client per
// model.
type catalog struct {
	p       *profile
	harness *hosts.Harness

	mu      sync.Mutex // guards clients
	clients map[string]*model.Client
}

func (c *catalog) Default() string { return c.p.model.Key }

// List lists the catalog's models in order.
func (c *catalog) List() []sessions.ModelInfo {
	out := []sessions.ModelInfo{}
	for _, key := range c.p.cfg.ModelKeys() {
		if m, err := c.p.cfg.Resolve(key); err == nil {
			out = append(out, sessions.ModelInfo{Key: m.Key, ContextWindow: m.ContextWindow, MaxImageBase64Bytes: m.MaxImageBase64Bytes})
		}
	}
	return out
}

func (c *catalog) Agent(key string, blocks []string) (sessions.AgentConfig, error) {
	m, err := c.p.cfg.Resolve(key)
	if err != nil {
		return sessions.AgentConfig{}, err
	}
	client, err := c.client(m)
	if err != nil {
		return sessions.AgentConfig{}, err
	}
	system := agent.SystemPrompt(agent.PromptOptions{
		Tools:         c.harness.Specs(),
		Hosts:         c.harness.Hosts(),
		ContextWindow: m.ContextWindow,
		AutoCompactAt: m.AutoCompactAt,
		Blocks:        blocks,
	})
	return sessions.AgentConfig{
		Options: agent.Options{
			Model: client, APIModel: m.APIID, MaxOutputTokens: m.MaxOutputTokens, Thinking: m.Thinking, Effort: m.Effort,
			System: system, MaxTruncatedResumes: m.MaxTruncatedResumes, ContextWindow: m.ContextWindow,
		},
		ModelKey: m.Key, Protocol: m.Protocol, ContextWindow: m.ContextWindow, AutoCompactAt: m.AutoCompactAt,
		CompactionMaxRequests: c.p.cfg.CompactionMaxRequests, MaxImageBase64Bytes: m.MaxImageBase64Bytes,
	}, nil
}

func (c *catalog) client(m config.Model) (*model.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.clients[m.Key]; cl != nil {
		return cl, nil
	}
	cl, err := newClient(m, c.p.env, c.p.home)
	if err != nil {
		return nil, err
	}
	if c.clients == nil {
		c.clients = map[string]*model.Client{}
	}
	c.clients[m.Key] = cl
	return cl, nil
}

// hostTools builds the local worker's standard tool services: bash (whose processes get
// the profile's variables and never the configured credentials, and die with this
// process), the editor and view_image with the catalog's largest image cap (each call is
// held to its session's model's). The editor and view_image stay out of myco's home but for
// the profile's workspace (and its manual, to read), and resolve relative paths against the
// caller's bash session's current directory.
func hostTools(p *profile, rp *reaper.Reaper) []tools.Tool {
	deny := []string{p.paths.Home}
	if !strings.HasPrefix(p.paths.ConfigFile, p.paths.Home+string(os.PathSeparator)) {
		deny = append(deny, p.paths.ConfigFile)
	}
	g := &tools.Guard{Deny: deny, Allow: []string{p.paths.WorkspaceDir()}, ReadOnly: []string{p.paths.ManualDir()}}
	bash := tools.NewBash(tools.BashOptions{Env: toolEnv(os.Environ(), p), Reaper: rp})
	return []tools.Tool{
		bash,
		tools.NewEditor(tools.EditorOptions{Guard: g, Dirs: bash}),
		tools.NewImage(tools.ImageOptions{MaxBase64Bytes: largestImageCap(p.cfg), Guard: g, Dirs: bash}),
	}
}

// largestImageCap is the largest max_image_base64_bytes of the catalog: the cap the hosts
// run with, while each call is held to its session's current model's (tools.WithImageLimit),
// so that a model switch needs no host restart.
func largestImageCap(cfg *config.Config) int {
	n := 0
	for _, m := range cfg.Models {
		n = max(n, m.MaxImageBase64Bytes)
	}
	return n
}

// toolEnv is the environment of local tool processes: env without the variables that
// carry model credentials (a command such as env must not print a key), with the
// profile's MYCO_PROFILE and absolute MYCO_HOME, so that a nested myco finds the same
// profile from any directory, and, when this process serves the profile, the instance's
// MYCO_SERVER_URL (for nested sessions through its API) and, in token mode, the
// MYCO_SERVER_TOKEN_FILE to send with it (curl -H @FILE): the token itself never reaches a
// command line, where every user of the machine could read it.
func toolEnv(env []string, p *profile) []string {
	drop := p.cfg.CredentialVars()
	ours := []string{"MYCO_PROFILE", "MYCO_HOME", "MYCO_SERVER_URL", "MYCO_SERVER_TOKEN", "MYCO_SERVER_TOKEN_FILE"}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(drop, name) || slices.Contains(ours, name)
	})
	out = append(out, "MYCO_PROFILE="+p.paths.Profile, "MYCO_HOME="+p.paths.Home)
	if p.serverURL != "" {
		out = append(out, "MYCO_SERVER_URL="+p.serverURL)
	}
	if p.tokenFile != "" {
		out = append(out, "MYCO_SERVER_TOKEN_FILE="+p.tokenFile)
	}
	return out
}
