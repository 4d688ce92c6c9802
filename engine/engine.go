package engine

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"myco.dev/hosts"
	"myco.dev/hosts/mcp"
	"myco.dev/hosts/snapshot"
	"myco.dev/hosts/tools"
	"myco.dev/internal/reaper"
	"myco.dev/internal/web"
	"myco.dev/sessions"
	"myco.dev/sessions/catalog"
	"myco.dev/workspace"
	"myco.dev/workspace/preludetool"
)

// Options configure an [Engine].
type Options struct {
	// Reaper makes the tool processes die with this process; the engine owns it and
	// closes it last.
	Reaper *reaper.Reaper
	// Wait makes jobs wait for another process that works on the same session (the
	// terminal modes); otherwise they are refused (the server).
	Wait bool
	// ServerURL is this instance's URL when the process serves the profile
	// (MYCO_SERVER_URL for the tools); TokenFile the 0600 file holding the header that
	// carries its secret, where the owner of a connection cannot be told
	// (MYCO_SERVER_TOKEN_FILE for the tools). Set by a worker, whose supervisor owns the
	// port.
	ServerURL, TokenFile string
	// API, when set, is the profile's server on a loopback port of the engine's own
	// ([web.Loopback]; myco -p and the chat), so that the tools' MYCO_SERVER_URL works for
	// nested sessions: the port is reserved before the tools are built, and API makes the
	// handler of e, port and token (set where the owner of a connection cannot be told) on
	// the port's first request. It is stopped first when the engine closes.
	API func(e *Engine, port, token string) (http.Handler, error)
	// Metrics, when set, counts what the engine's session service and model clients do
	// (a profile worker's, kept across the engines its config's changes build).
	Metrics *Metrics
	// Guard turns on modes, rules, approvals and the sandbox; nil runs every call at once.
	Guard *GuardOptions
	Log   *slog.Logger // nil means slog.Default()
}

// Engine is one profile's session service and what it runs on: the host harness shared
// by every session (local tools in process, lazy remotes), the root-only tools and the
// model catalog. Close it when done.
type Engine struct {
	Sessions *sessions.Manager
	Harness  *hosts.Harness
	// Projects are the servers that sessions' directories offer, and their approvals.
	Projects *Projects
	std      []tools.Tool
	mcp      *mcp.Set // the local MCP servers
	reaper   *reaper.Reaper
	api      *web.Loopback // the API of o.API; nil when none
	// built is the profile the harness and its tools were built from; Apply compares a
	// changed config with it.
	built   *Profile
	catalog atomic.Pointer[catalog.Catalog] // the catalog in use; Apply swaps a new one in
	metrics *Metrics                        // nil when none

	stopFollow context.CancelFunc // ends the metrics' consumer of the service's updates
	following  sync.WaitGroup

	warmStop context.CancelFunc // ends a Warm in progress; nil when none was started
	warming  sync.WaitGroup
}

// Warm opens model key's connection ("" means the profile's model) in the background,
// bounded by 10 s and by Close: myco -p, whose first request follows the session's
// creation and its input's save, overlaps the dial and the TLS handshake with them, and the
// request waits for the connection rather than opening another. Call it once, before the
// first turn.
func (e *Engine) Warm(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	e.warmStop = cancel
	cat := e.catalog.Load()
	e.warming.Go(func() {
		defer cancel()
		cat.Warm(ctx, key)
	})
}

// New builds the session service of profile p. On an error, o.Reaper is closed too.
func New(p *Profile, o Options) (*Engine, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	var api *web.Loopback
	if o.API != nil {
		// As the server does where a connection's owner cannot be told: a token that only
		// this user can read, in a file of MYCO_HOME.
		tokenFile := func(port string) string { return filepath.Join(p.Paths.Home, "cli-"+port+".token") }
		var err error
		if api, err = web.ListenLoopback(tokenFile, o.Log); err != nil {
			o.Reaper.Close()
			return nil, fmt.Errorf("the nested-session API: %w", err)
		}
		o.ServerURL, o.TokenFile = api.URL()+"/profiles/"+p.Paths.Profile, api.TokenFile
	}
	e, err := build(p, o)
	if err != nil {
		if api != nil {
			api.Close()
		}
		return nil, err
	}
	if api != nil {
		api.Serve(lazyAPI(func() (http.Handler, error) { return o.API(e, api.Port, api.Token) }, o.Log))
		e.api = api
	}
	if o.Metrics != nil {
		// Subscribed before anything can run, so that no update is missed.
		sub := e.Sessions.Subscribe(nil, "").Exact()
		ctx, cancel := context.WithCancel(context.Background())
		e.stopFollow = cancel
		e.following.Go(func() { o.Metrics.follow(ctx, e.Sessions, sub) })
	}
	return e, nil
}

// lazyAPI serves the handler that build makes on the first request: most runs of myco -p
// make none (only an agent that starts a child session does), and building the server (its
// router, the assets' hashes) would come before the first model request. A build that fails
// is logged once and every request is answered 503 with why.
func lazyAPI(build func() (http.Handler, error), log *slog.Logger) http.Handler {
	serve := sync.OnceValue(func() http.Handler {
		h, err := build()
		if err == nil {
			return h
		}
		log.Error("the nested-session API cannot serve", "err", err)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			web.WriteError(w, web.NewError(http.StatusServiceUnavailable, "unavailable", "this myco's API for nested sessions failed to start: "+err.Error()))
		})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serve().ServeHTTP(w, r) })
}

// build builds the engine of p, without its API.
func build(p *Profile, o Options) (*Engine, error) {
	reg := &sessions.Registry{}
	std := catalog.LocalTools(catalog.LocalOptions{Paths: p.Paths, Config: p.Config, Env: p.o.Environ, Reaper: o.Reaper,
		ServerURL: o.ServerURL, TokenFile: o.TokenFile})
	e := &Engine{std: std, reaper: o.Reaper, built: p, metrics: o.Metrics}
	remotes, ro, err := p.remotes(o.Log)
	if err != nil {
		e.closeTools()
		return nil, err
	}
	ro.OnState = func(st hosts.Status) {
		if e.Sessions != nil {
			e.Sessions.Publish(hostUpdate(st))
		}
	}
	prelude := preludetool.New(&workspace.Prelude{Dir: p.Paths.PreludeDir(), Max: p.Config.MaxPreludeBytes})
	e.Projects = p.projects(o.Log)
	ho, err := p.mcpOptions(remotes, o.Reaper, e.Projects, o.Log)
	if err != nil {
		e.closeTools()
		return nil, err
	}
	ho.Tools, ho.Root = std, []tools.Tool{sessions.NewHistoryTool(reg), sessions.NewMetaTool(reg), prelude}
	ho.Remotes, ho.Remote = remotes, ro
	if snaps := p.Config.Snapshots; snaps.Enabled {
		ho.OpenSnapshots = func() (*snapshot.Store, error) {
			return snapshot.Open(snapshot.Options{Dir: p.Paths.SnapshotDir(), MaxFileSize: snaps.MaxFileBytes, Log: o.Log})
		}
	}
	e.mcp = ho.MCP
	if e.Harness, err = hosts.NewHarness(ho); err != nil {
		e.closeTools()
		return nil, fmt.Errorf("build the harness: %w", err)
	}
	cat := newCatalog(p, e.Harness, e.metrics)
	e.catalog.Store(cat)
	g, err := guard(p, o.Guard, o.ServerURL)
	if err != nil {
		e.Harness.Close()
		e.closeTools()
		return nil, err
	}
	e.Sessions, err = sessions.NewManager(sessions.ManagerOptions{
		Store:    sessions.NewStore(p.Paths.SessionDir()),
		Models:   cat,
		Tools:    toolHost{e.Harness},
		Registry: reg,
		Wait:     o.Wait,
		Guard:    g,
		Log:      o.Log,
		Dir:      p.o.Dir,
		Snapshots: sessions.SnapshotOptions{Enabled: p.Config.Snapshots.Enabled, MaxFileBytes: p.Config.Snapshots.MaxFileBytes,
			MaxFiles: p.Config.Snapshots.MaxFiles, KeepTurns: p.Config.Snapshots.KeepTurns, Exclude: []string{p.Paths.Home}},
		MaxCost: p.Config.MaxCost,
		Prompt: catalog.Prompt(catalog.PromptOptions{Paths: p.Paths, MaxPreludeBytes: p.Config.MaxPreludeBytes, Manual: p.o.Manual,
			Warn: p.o.Warn, Config: p.Config, Tools: e.Harness}),
	})
	if err != nil {
		e.Harness.Close()
		e.closeTools()
		return nil, err
	}
	return e, nil
}

// ApproveProject records the person's approval of dir's project MCP file, whose content
// they were shown with digest sum (see [Projects.Approve]), and has the harness use it at
// once: the sessions in dir get the servers' tools with their next model request.
func (e *Engine) ApproveProject(dir, sum string) (hosts.ProjectOffer, error) {
	o, err := e.Projects.Approve(dir, sum)
	e.Harness.ProjectChanged(dir)
	return o, err
}

// newCatalog is the model catalog of p, whose system prompt tells of tools and whose
// clients' attempts m counts, when it is set.
func newCatalog(p *Profile, tools catalog.Tools, m *Metrics) *catalog.Catalog {
	o := catalog.Options{Config: p.Config, Default: p.Model.Key, Env: p.Env, Home: p.o.Home, Tools: tools}
	if m != nil {
		o.Observe = m.Observe
	}
	return catalog.New(o)
}

// Close stops every job (turns end cancelled and checkpointed), releases every session's
// tools and ends the remote connections and local processes. The API stops first: no
// request starts work on a service that is closing.
func (e *Engine) Close() {
	if e.warmStop != nil {
		e.warmStop()
		e.warming.Wait()
	}
	if e.api != nil {
		e.api.Close()
	}
	e.Sessions.Close()
	if e.stopFollow != nil {
		// The consumer reads every update the service published before it closed (its
		// stopped turns' ends too) before it sees either end.
		e.stopFollow()
		e.following.Wait()
	}
	e.Harness.Close()
	e.closeTools()
}

// closeTools ends the local tools' processes, the local MCP servers and the reaper.
func (e *Engine) closeTools() {
	for _, t := range e.std {
		if c, ok := t.(interface{ Close() }); ok {
			c.Close()
		}
	}
	if e.mcp != nil {
		e.mcp.Close()
	}
	e.reaper.Close()
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
	_ sessions.Releaser      = toolHost{}
	_ sessions.Inventorier   = toolHost{}
	_ sessions.Snapshotter   = toolHost{}
	_ sessions.SnapshotSizer = toolHost{}
)

func (t toolHost) Capture(ctx context.Context, host string, r snapshot.CaptureRequest) (snapshot.CaptureResult, error) {
	return t.h.Capture(ctx, host, r)
}

func (t toolHost) Diff(ctx context.Context, host string, from, to snapshot.ID, o snapshot.DiffOptions) (*snapshot.Diff, error) {
	return t.h.Diff(ctx, host, from, to, o)
}

func (t toolHost) Restore(ctx context.Context, host string, r snapshot.RestoreRequest) (*snapshot.RestoreResult, error) {
	return t.h.Restore(ctx, host, r)
}

func (t toolHost) SnapshotSize() (int64, error) { return t.h.SnapshotSize() }

func (t toolHost) Prune(ctx context.Context, host, owner string, keep []snapshot.ID) (snapshot.PruneResult, error) {
	return t.h.Prune(ctx, host, owner, keep)
}

func (t toolHost) Tools(owner, dir string) sessions.Tools { return t.h.ForDir(owner, dir) }
func (t toolHost) Release(owner string)                   { t.h.Release(owner) }

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
