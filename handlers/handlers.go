// Package handlers is one profile's HTTP server (the profile worker's): the chi router
// behind the host, origin and owner checks of package web, the pages and htmx fragments,
// the event streams, the read-only workspace viewer and the JSON API, whose requests,
// answers and events are the types of package api. Handlers are thin: each parses its input, makes one call on the
// session service and renders one component of package views or one typed answer. Errors
// become answers in one place, [sessionError] with [web.Resolve].
//
// The supervisor that owns the port and routes to the profiles' workers is package
// profiles, which this package does not import. It must not be imported by sessions,
// agent, hosts, workspace, config or profiles.
package handlers

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/go-chi/chi/v5"

	"myco.dev/hosts"
	"myco.dev/internal/build"
	"myco.dev/internal/metrics"
	"myco.dev/internal/web"
	"myco.dev/sessions"
	"myco.dev/static"
	"myco.dev/views"
	"myco.dev/workspace"
)

// ModelInfo is what the pages show and check of a catalog model.
type ModelInfo struct {
	Key                 string
	Protocol            string // the wire protocol, as config.toml names it
	ContextWindow       int
	MaxImageBase64Bytes int
	AutoCompactAt       float64 // the fraction of the window that compacts; 0 when off
}

// HostState is a remote host's state for the status bar.
type HostState struct {
	Name, State, Error string
}

// Deps are what the handlers of one profile work with.
type Deps struct {
	Profile string
	// Search is the profile's content index; nil means the server has none (search then
	// finds by title only).
	Search   Searcher
	Sessions *sessions.Manager // the profile's session service
	Models   []ModelInfo       // the catalog, in order
	Default  string            // the default model key
	// Workspace is the profile's workspace directory, read-only through a capability.
	Workspace    *workspace.Files
	WorkspaceDir string
	// Dir is the server's working directory, the one New session offers first (a session
	// created without a directory works in the session service's own).
	Dir  string
	Home string // the user's home, for ~/ in @path attachments
	// MycoHome is myco's own directory (MYCO_HOME): the viewer of a session's directory
	// never shows what is inside it, nor browses a session's directory inside it.
	MycoHome string
	// Hosts returns the remote hosts' states; nil means none.
	Hosts func() []HostState
	// Project returns what the project file of a session's directory (its .mcp.json)
	// offers, and the states of the servers started for it; nil means none is looked at.
	// ApproveProject records the person's approval of dir's file, whose content they were
	// shown with digest sum: [hosts.ErrProjectChanged] when it changed since.
	Project        func(dir string) hosts.ProjectStatus
	ApproveProject func(dir, sum string) error
	// Profiles returns the names of the server's profiles, for the switcher; nil means
	// this one only.
	Profiles func() []string
	Assets   *static.Assets
	// Port is the server's port, for the Host and Origin checks.
	Port string
	// UID is the only user served, told by the connection's socket owner (see
	// [web.ConnContext]); Token, when set, is required instead (where no owner can be told).
	UID   int
	Token string
	// ApprovalKey is the approval capability: a request that answers an approval or
	// changes a session's mode must carry it ([ApprovalHeader] or the cookie GET /approve
	// sets). Empty refuses every such request.
	ApprovalKey string
	// Worker marks a profile worker, whose connections the supervisor may hand over: a
	// request on one of them for another profile is sent back through the supervisor.
	Worker bool
	// Pprof serves net/http/pprof at the profile's /debug/pprof/, behind the same checks
	// and the origin check of event streams.
	Pprof bool
	// Ping is the interval of the page event streams' ping event; 0 means 5 s. APIPing
	// is the API event stream's; 0 means 15 s.
	Ping    time.Duration
	APIPing time.Duration
	// StreamWriteTimeout cuts off an event stream whose client stops reading, after a
	// write waited this long; 0 means web.StreamWriteTimeout.
	StreamWriteTimeout time.Duration
	// ConfigError, when set, is why the profile's config could not be loaded: the pages
	// show it, the sessions and the workspace stay readable, and what needs a model (a
	// create, a submit, a compaction, a model choice) is refused with config_invalid.
	ConfigError string
	// Warning is shown on every page: a changed config that failed to load (the last good
	// one serves), or that waits for the running turns.
	Warning string
	// Build is the running binary's build, for GET /api/version.
	Build build.Info
	// Metrics, when set, is served at the profile's /metrics in the Prometheus text format
	// (a profile worker's; the server gathers every worker's at its own /metrics).
	Metrics *metrics.Registry
	// Streams, when set, counts the event streams open, by kind: page, api.
	Streams *metrics.GaugeVec
	Log     *slog.Logger // nil means slog.Default()
}

// server holds the handlers' shared state.
type server struct {
	Deps
	base   string // "/profiles/NAME"
	md     *mdCache
	errors web.Errors // the one mapping of errors to answers, pages and API alike
}

// documentCSP is the content policy of workspace documents and raw files.
const documentCSP = web.DocumentCSP

// New returns the server's handler: every route, behind the host check, the owner (or
// token) check and the security headers; state-changing routes and event streams also pass
// the origin check.
func New(d Deps) http.Handler {
	s := newServer(d)
	var h http.Handler = s.router()
	if d.Worker {
		h = elsewhere(s.base, h)
	}
	return web.Access{Port: d.Port, UID: d.UID, Token: d.Token}.Guard(h)
}

func newServer(d Deps) *server {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Ping <= 0 {
		d.Ping = 5 * time.Second
	}
	if d.APIPing <= 0 {
		d.APIPing = apiPing
	}
	if d.StreamWriteTimeout <= 0 {
		d.StreamWriteTimeout = web.StreamWriteTimeout
	}
	return &server{Deps: d, base: "/profiles/" + d.Profile, md: newMDCache(64 << 20),
		errors: web.Errors{Domain: sessionError, Log: d.Log}}
}

// router is the whole URL surface of the server.
func (s *server) router() chi.Router {
	r := chi.NewRouter()
	r.Use(web.AccessLog(s.Log), web.Headers, buffered)
	r.Get("/", func(w http.ResponseWriter, r *http.Request) {
		web.Redirect(w, r, s.base+"/", http.StatusSeeOther)
	})
	r.Get("/static/*", s.Assets.ServeHTTP)
	r.Head("/static/*", s.Assets.ServeHTTP)
	r.Route(s.base, func(r chi.Router) {
		r.Get("/", s.handle(s.sessionsPage))
		r.Get("/switch", s.handle(s.switcher))
		r.With(s.origin).Post("/s", s.handle(s.newSession))
		r.Get("/new", s.handle(s.newSessionPage))
		r.Get("/approve", s.handle(s.grantApprover))
		r.With(s.origin).Get("/dirs", s.handle(s.dirOptions))
		r.With(s.origin).Get(views.StatesPath, s.handle(s.stateEvents))
		r.Route("/s/{id}", func(r chi.Router) {
			r.Get("/", s.handle(s.sessionPage))
			r.Get("/t/{thread}", s.handle(s.threadPage))
			r.Get("/earlier", s.handle(s.earlier))
			r.Get("/tool/{thread}/{call}", s.handle(s.toolOutput))
			r.Get("/image/{thread}/{entry}/{part}/{n}", s.handle(s.image))
			r.Get("/raw/{thread}/{entry}", s.handle(s.rawMessage))
			r.Get("/export.md", s.handle(s.export))
			r.Get("/changes", s.handle(s.changesPage))
			r.Get("/files", func(w http.ResponseWriter, r *http.Request) {
				web.Redirect(w, r, s.filesURL(chi.URLParam(r, "id")), http.StatusMovedPermanently)
			})
			r.Get("/files/*", s.handle(s.sessionFiles))
			r.Get("/approvals", s.handle(s.approvalsSlot))
			r.With(s.origin).Get("/events", s.handle(s.events))
			r.With(s.origin).Get("/complete", s.handle(s.completeAttachment))
			r.Group(func(r chi.Router) {
				r.Use(s.origin)
				r.Post("/submit", s.handle(s.submit))
				r.Post("/stop", s.handle(s.stop))
				r.Post("/retry", s.handle(s.retry))
				r.Post("/edit/{thread}/{entry}", s.handle(s.editResend))
				r.Post("/undo", s.handle(s.undoTurn))
				r.Post("/revert", s.handle(s.revertFile))
				r.Post("/queue/run", s.handle(s.runQueued))
				r.Post("/queue/{qid}/edit", s.handle(s.editQueued))
				r.Post("/queue/{qid}/delete", s.handle(s.unqueue))
				r.Post("/compact", s.handle(s.compact))
				r.Post("/archive", s.handle(s.archive(true)))
				r.Post("/restore", s.handle(s.archive(false)))
				r.Post("/model", s.handle(s.selectModel))
				r.Post("/title", s.handle(s.rename))
				r.Post("/mcp/approve", s.handle(s.approveProject))
				r.Post("/approvals/{call}", s.handle(s.answerApproval))
				r.Post("/mode", s.handle(s.setMode))
			})
		})
		if s.Pprof {
			// Behind the origin check: another site's page could otherwise start a profile
			// or a trace with a plain GET, and the owner's own would fail while it runs.
			r.With(s.origin).Handle("/debug/pprof/*", http.StripPrefix(s.base, http.HandlerFunc(pprofHandler)))
		}
		if s.Metrics != nil {
			r.Get("/metrics", s.Metrics.ServeHTTP)
		}
		r.Route("/api", s.apiRoutes)
		r.Get("/workspace", func(w http.ResponseWriter, r *http.Request) {
			web.Redirect(w, r, s.base+"/workspace/", http.StatusMovedPermanently)
		})
		r.Get("/workspace/*", s.handle(s.workspace))
	})
	r.NotFound(s.handle(func(w http.ResponseWriter, r *http.Request) error { return errNotFound }))
	r.MethodNotAllowed(s.handle(func(w http.ResponseWriter, r *http.Request) error {
		return httpError(http.StatusMethodNotAllowed, "This address does not take a "+r.Method+" request.")
	}))
	return r
}

// origin is the origin check as chi middleware.
func (s *server) origin(next http.Handler) http.Handler {
	return web.OriginGuard(s.Port, web.ForbidOrigin)(next)
}

// pprofHandler serves net/http/pprof's pages: the index and the named profiles.
func pprofHandler(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/debug/pprof/cmdline":
		pprof.Cmdline(w, r)
	case "/debug/pprof/profile":
		pprof.Profile(w, r)
	case "/debug/pprof/symbol":
		pprof.Symbol(w, r)
	case "/debug/pprof/trace":
		pprof.Trace(w, r)
	default:
		pprof.Index(w, r)
	}
}
