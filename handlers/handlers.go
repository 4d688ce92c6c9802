// Package handlers is the browser server's HTTP surface: the chi router with its host,
// origin and owner checks, the pages and htmx fragments, the event streams, the read-only
// workspace viewer and the JSON API. Handlers are thin: each parses its input, makes one
// call on the session service and renders one component of package views.
//
// It must not be imported by sessions, agent, hosts, workspace or config.
package handlers

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"myco.dev/agent/model"
	"myco.dev/sessions"
	"myco.dev/static"
	"myco.dev/workspace"
)

// Sessions is what the handlers need of the profile's session service;
// *sessions.Manager satisfies it.
type Sessions interface {
	Create(ctx context.Context, o sessions.CreateOptions) (string, error)
	Submit(ctx context.Context, id string, input ...model.Part) (*sessions.Job, error)
	Compact(ctx context.Context, id string) (*sessions.Job, error)
	Stop(id string) bool
	Snapshot(ctx context.Context, id string) (*sessions.Session, sessions.Status, error)
	List(ctx context.Context, o sessions.ListOptions) ([]sessions.Listed, error)
	SetArchived(ctx context.Context, id string, archived bool) error
	SetTitle(ctx context.Context, id, title string) error
	SelectModel(ctx context.Context, id, key string) error
	Subscribe(ids []string, after string) *sessions.Subscription
	EventID() string
	// The JSON API's idempotent requests and the session trees.
	CreateRequest(ctx context.Context, requestID string, o sessions.CreateOptions) (string, bool, error)
	SubmitRequest(ctx context.Context, id, requestID string, input ...model.Part) (sessions.Acceptance, error)
	Act(ctx context.Context, id, requestID, action, arg string) (sessions.ActionRecord, bool, error)
	Lineage(ctx context.Context, id string) (root string, depth int, err error)
	Tree(ctx context.Context, id string) (*sessions.TreeNode, error)
}

// ModelInfo is what the pages show and check of a catalog model.
type ModelInfo struct {
	Key                 string
	ContextWindow       int
	MaxImageBase64Bytes int
}

// HostState is a remote host's state for the status bar.
type HostState struct {
	Name, State, Error string
}

// Deps are what the handlers of one profile work with.
type Deps struct {
	Profile  string
	Sessions Sessions
	Models   []ModelInfo // the catalog, in order
	Default  string      // the default model key
	// Workspace is the profile's workspace directory, read-only through a capability.
	Workspace    *workspace.Files
	WorkspaceDir string
	// Dir is the server's working directory: relative @path attachments resolve there.
	Dir  string
	Home string // the user's home, for ~/ in @path attachments
	// Hosts returns the remote hosts' states; nil means none.
	Hosts func() []HostState
	// Profiles returns the names of the server's profiles, for the switcher; nil means
	// this one only.
	Profiles func() []string
	Assets   *static.Assets
	// Port is the server's port, for the Host and Origin checks.
	Port string
	// UID is the only user served, told by the connection's socket owner (see
	// [ConnContext]); Token, when set, is required instead (where no owner can be told).
	UID   int
	Token string
	// Worker marks a profile worker, whose connections the supervisor may hand over: a
	// request on one of them for another profile is sent back through the supervisor.
	Worker bool
	// Ping is the interval of the page event streams' ping event; 0 means 5 s. APIPing
	// is the API event stream's; 0 means 15 s.
	Ping    time.Duration
	APIPing time.Duration
	Log     *slog.Logger
}

// server holds the handlers' shared state.
type server struct {
	Deps
	base string // "/profiles/NAME"
	md   *mdCache
}

// New returns the server's handler: every route, behind the host check, the owner (or
// token) check and the security headers; state-changing routes and event streams also pass
// the origin check.
func New(d Deps) http.Handler {
	s := newServer(d)
	var h http.Handler = s.router()
	if d.Worker {
		h = elsewhere(s.base, h)
	}
	if d.Token != "" {
		h = tokenCheck(d.Token, d.Port, h)
	} else {
		h = ownerCheck(d.UID, h)
	}
	return hostCheck(d.Port, h)
}

func newServer(d Deps) *server {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Ping <= 0 {
		d.Ping = 5 * time.Second
	}
	if d.APIPing <= 0 {
		d.APIPing = apiPing
	}
	return &server{Deps: d, base: "/profiles/" + d.Profile, md: newMDCache(64 << 20)}
}

// router is the whole URL surface of the server.
func (s *server) router() chi.Router {
	r := chi.NewRouter()
	r.Use(headers, buffered)
	r.Get("/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, s.base+"/", http.StatusSeeOther)
	})
	r.Get("/static/*", s.Assets.ServeHTTP)
	r.Head("/static/*", s.Assets.ServeHTTP)
	r.Route(s.base, func(r chi.Router) {
		r.Get("/", s.handle(s.sessionsPage))
		r.With(s.origin).Post("/s", s.handle(s.newSession))
		r.Route("/s/{id}", func(r chi.Router) {
			r.Get("/", s.handle(s.sessionPage))
			r.Get("/t/{thread}", s.handle(s.threadPage))
			r.Get("/earlier", s.handle(s.earlier))
			r.Get("/tool/{thread}/{call}", s.handle(s.toolOutput))
			r.Get("/image/{thread}/{entry}/{part}/{n}", s.handle(s.image))
			r.With(s.origin).Get("/events", s.handle(s.events))
			r.Group(func(r chi.Router) {
				r.Use(s.origin)
				r.Post("/submit", s.handle(s.submit))
				r.Post("/stop", s.handle(s.stop))
				r.Post("/compact", s.handle(s.compact))
				r.Post("/archive", s.handle(s.archive(true)))
				r.Post("/restore", s.handle(s.archive(false)))
				r.Post("/model", s.handle(s.selectModel))
			})
		})
		r.Route("/api", func(r chi.Router) {
			r.Get("/sessions", s.api(s.apiList))
			r.Get("/sessions/{id}", s.api(s.apiSnapshot))
			r.With(s.apiOrigin).Get("/events", s.api(s.apiEvents))
			r.Group(func(r chi.Router) {
				r.Use(s.apiOrigin)
				r.Post("/sessions", s.api(s.apiCreate))
				r.Post("/sessions/{id}/actions", s.api(s.apiAction))
				r.Post("/sessions/{id}/cancel", s.api(s.apiCancel))
			})
			r.NotFound(s.api(func(http.ResponseWriter, *http.Request) (any, error) {
				return nil, apiError(http.StatusNotFound, "not_found", "no such API endpoint; see docs/browser.md")
			}))
			r.MethodNotAllowed(s.api(func(w http.ResponseWriter, r *http.Request) (any, error) {
				return nil, apiError(http.StatusMethodNotAllowed, "method_not_allowed", "this endpoint does not take "+r.Method)
			}))
		})
		r.Get("/workspace", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, s.base+"/workspace/", http.StatusMovedPermanently)
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
func (s *server) origin(next http.Handler) http.Handler { return originGuard(s.Port, forbid)(next) }

// apiOrigin is the origin check of the API, answering in its error envelope.
func (s *server) apiOrigin(next http.Handler) http.Handler {
	return originGuard(s.Port, func(w http.ResponseWriter, msg string) {
		writeJSON(w, http.StatusForbidden, map[string]any{"error": map[string]string{"code": "forbidden_origin", "message": msg}})
	})(next)
}

// originGuard is middleware that passes only requests the origin check admits, answering
// the others with refuse.
func originGuard(port string, refuse func(http.ResponseWriter, string)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if msg := originCheck(port, r); msg != "" {
				refuse(w, msg)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// PortOf returns the port of a listener's address, for Deps.Port.
func PortOf(addr net.Addr) string {
	if a, ok := addr.(*net.TCPAddr); ok {
		return strconv.Itoa(a.Port)
	}
	_, p, _ := net.SplitHostPort(addr.String())
	return p
}
