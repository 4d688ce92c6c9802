package profiles

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/http/pprof"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"myco.dev/internal/handoff"
	"myco.dev/internal/metrics"
	"myco.dev/internal/web"
	"myco.dev/static"
	"myco.dev/views"
)

// Workers is what the supervisor needs of the profile workers; [*Pool] satisfies it.
type Workers interface {
	// Worker starts profile name's worker if it does not run and returns the sender that
	// reaches it and its generation (a new one for each process started).
	Worker(ctx context.Context, name string) (snd *handoff.Sender, generation int, err error)
	// Running returns what Worker would for a worker that runs and serves, and starts
	// none: ok is false when there is none.
	Running(name string) (snd *handoff.Sender, generation int, ok bool)
	States() []State
}

// SupervisorOptions configures a [Supervisor].
type SupervisorOptions struct {
	Workers Workers
	// Exists reports whether profile name has a directory (a profile appears when its
	// directory does, without a restart).
	Exists  func(name string) bool
	Default string // the profile / redirects to; it is served even before its directory exists
	Assets  *static.Assets
	Port    string
	UID     int
	Token   string
	Log     *slog.Logger // nil means slog.Default()
	Version string       // the build, for /healthz
	// Pprof serves net/http/pprof at /debug/pprof/, behind the same checks as every page
	// and the origin check of event streams.
	Pprof bool
	// MetricsTimeout bounds the wait for each worker's metrics at GET /metrics; 0 means
	// 2 s. A worker that does not answer in time is left out.
	MetricsTimeout time.Duration
}

// supervisor is the server that owns the port: it checks every request (Host, the socket's
// owner, Origin) and forwards the pages, documents and API of /profiles/NAME/ to NAME's
// worker, and it merges the workers' event streams into one stream per browser.
type supervisor struct {
	SupervisorOptions

	mu      sync.Mutex // guards proxies
	proxies map[string]*workerProxy

	streams streams
	metrics *metrics.Registry // the supervisor's own families
}

// workerProxy forwards to one worker process.
type workerProxy struct {
	sender     *handoff.Sender
	generation int
	transport  *http.Transport
	proxy      *httputil.ReverseProxy
}

// Supervisor is the supervisor's handler; see [Supervisor.Listener] for the connections
// it hands to the workers.
type Supervisor struct {
	http.Handler
	s *supervisor
}

// NewSupervisor returns the supervisor's handler: every route behind the Host check and
// the owner (or token) check.
func NewSupervisor(o SupervisorOptions) *Supervisor {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.MetricsTimeout <= 0 {
		o.MetricsTimeout = 2 * time.Second
	}
	s := &supervisor{SupervisorOptions: o, proxies: map[string]*workerProxy{}}
	s.streams.s = s
	s.metrics = s.newMetrics()
	return &Supervisor{Handler: web.Access{Port: o.Port, UID: o.UID, Token: o.Token}.Guard(s.router()), s: s}
}

func (s *supervisor) router() chi.Router {
	r := chi.NewRouter()
	r.Group(func(r chi.Router) {
		// The supervisor's own answers; the workers' carry their own headers and log their
		// own requests.
		r.Use(web.AccessLog(s.Log), web.Headers)
		r.Get("/", func(w http.ResponseWriter, r *http.Request) {
			web.Redirect(w, r, "/profiles/"+s.Default+"/", http.StatusSeeOther)
		})
		r.Get("/static/*", s.Assets.ServeHTTP)
		r.Head("/static/*", s.Assets.ServeHTTP)
		r.Get("/status", s.status)
		r.Get("/healthz", s.health)
		r.Get("/metrics", s.serveMetrics)
		if s.Pprof {
			// Behind the origin check, as event streams are: another site's page could
			// otherwise start a CPU profile or a trace with a plain GET (an image), and the
			// owner's own would fail while it runs ("already in use").
			r.Group(func(r chi.Router) {
				r.Use(s.origin)
				r.HandleFunc("/debug/pprof/*", pprof.Index)
				r.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
				r.HandleFunc("/debug/pprof/profile", pprof.Profile)
				r.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
				r.HandleFunc("/debug/pprof/trace", pprof.Trace)
			})
		}
		r.With(s.origin).Get("/events", s.mergedEvents)
		r.With(s.origin).Post("/events/{stream}", s.subscribe)
	})
	r.Handle("/profiles/{name}", http.HandlerFunc(s.forward))
	r.Handle("/profiles/{name}/*", http.HandlerFunc(s.forward))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, web.NewError(http.StatusNotFound, "not_found", "There is nothing at this address."))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, web.NewError(http.StatusMethodNotAllowed, "method_not_allowed", "This address does not take a "+r.Method+" request."))
	})
	return r
}

func (s *supervisor) origin(next http.Handler) http.Handler {
	return web.OriginGuard(s.Port, web.ForbidOrigin)(next)
}

// profileName matches a valid profile name: letters, digits, '-' and '_'.
var profileName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// served reports whether profile name is one the supervisor serves: a valid name whose
// directory exists, or the default profile.
func (s *supervisor) served(name string) bool {
	if !profileName.MatchString(name) {
		return false
	}
	return name == s.Default || (s.Exists != nil && s.Exists(name))
}

// forward sends a request for /profiles/NAME/… to NAME's worker, starting it when none
// runs. Unsafe methods and event streams pass the origin check here too.
func (s *supervisor) forward(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	if !s.served(name) {
		s.fail(w, r, web.NewError(http.StatusNotFound, "not_found", "There is no profile "+strconv.Quote(name)+" here."))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead || strings.HasSuffix(r.URL.Path, "/events") {
		if msg := web.OriginCheck(s.Port, r); msg != "" {
			web.ForbidOrigin(w, msg)
			return
		}
	}
	p, err := s.proxyFor(r.Context(), name)
	if err != nil {
		s.workerError(w, r, name, err)
		return
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		web.Unbounded(w) // read whole; its answer may be an event stream that lasts
	}
	p.proxy.ServeHTTP(w, r)
}

// proxyFor returns the proxy to profile name's worker, starting the worker when needed. A
// restarted worker gets a fresh transport, so no idle connection to its predecessor is
// used.
func (s *supervisor) proxyFor(ctx context.Context, name string) (*workerProxy, error) {
	snd, gen, err := s.Workers.Worker(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.proxyOf(name, snd, gen), nil
}

// proxyOf returns the proxy to profile name's worker of generation gen, reached by snd.
func (s *supervisor) proxyOf(name string, snd *handoff.Sender, gen int) *workerProxy {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A restarted worker is a new process: the old transport's kept connections lead to the
	// process that ended, and a request sent on one (a POST is not retried) would fail.
	if p := s.proxies[name]; p != nil && p.sender == snd && p.generation == gen {
		return p
	}
	if old := s.proxies[name]; old != nil {
		old.transport.CloseIdleConnections()
	}
	tr := &http.Transport{
		// Each connection is a fresh socket pair whose other end the worker is handed.
		DialContext:         func(context.Context, string, string) (net.Conn, error) { return snd.Dial() },
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	p := &workerProxy{sender: snd, generation: gen, transport: tr, proxy: &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "profile-"+name
			pr.Out.Host = pr.In.Host // the worker checks the same Host
		},
		Transport:  tr,
		BufferPool: proxyBuffers{}, // event streams are flushed as they come (text/event-stream)
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client left
			}
			s.Log.Warn("profile worker did not answer", "profile", name, "path", r.URL.Path, "err", err)
			s.fail(w, r, workerFailed(name))
		},
	}}
	s.proxies[name] = p
	return p
}

// workerFailed is the answer to a request whose worker stopped while answering it,
// forwarded by the supervisor or on a connection handed to the worker.
func workerFailed(name string) *web.Error {
	return web.NewError(http.StatusBadGateway, "worker_failed",
		"The worker of profile "+name+" stopped while answering this request. It starts again with the next one: reload the page.")
}

// workerError answers a request whose profile's worker is not there: a config that does
// not load (shown with its path and the error), a worker that crashes too often (with when
// it is tried again), or a server shutting down. These are the supervisor's own errors,
// mapped here once; none carries a cause to log but the unexpected one, logged here with
// its profile.
func (s *supervisor) workerError(w http.ResponseWriter, r *http.Request, name string, err error) {
	var se *StartError
	var be *BackoffError
	var msg string
	switch {
	case errors.As(err, &be):
		w.Header().Set("Retry-After", strconv.Itoa(int(time.Until(be.Until).Seconds())+1))
		msg = "The worker of profile " + name + " crashed " + strconv.Itoa(be.Crashes) +
			" times in the last minutes, so it is started again only after a pause: try again in " + time.Until(be.Until).Round(time.Second).String() + ". Its log is in the server's output."
	case errors.As(err, &se):
		msg = "Profile " + name + " could not start"
		if se.Output != "" {
			msg += ":\n\n" + se.Output
		} else {
			msg += ": " + se.Err.Error()
		}
		msg += "\n\nFix it, then reload: the profile starts again with the next request. The other profiles are not affected."
	case errors.Is(err, ErrClosed):
		msg = "The server is shutting down."
	case r.Context().Err() != nil:
		return // the client left
	default:
		s.Log.Error("start profile worker", "profile", name, "err", err)
		msg = "The worker of profile " + name + " could not be reached; the server's output says why."
	}
	s.fail(w, r, web.NewError(http.StatusServiceUnavailable, "unavailable", msg))
}

// fail answers e with a small page saying what went wrong, or, under an API path, in the
// API's error envelope. The supervisor's answers carry the security headers the workers'
// answers carry, which its forwarding routes do not set.
func (s *supervisor) fail(w http.ResponseWriter, r *http.Request, e *web.Error) {
	web.SetHeaders(w.Header())
	if strings.Contains(r.URL.Path, "/api/") {
		web.WriteError(w, e)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(e.Status)
	c := views.Chrome{Title: http.StatusText(e.Status), Base: "/profiles/" + s.Default}
	for _, n := range []string{static.AppCSS} {
		if u := s.Assets.URL(n); u != "" {
			c.CSS = append(c.CSS, u)
		}
	}
	views.ErrorPage(views.ErrorView{Chrome: c, Code: e.Status, Message: e.Message}).Render(r.Context(), w)
}

// status answers the workers' states and the number of merged event streams open (one per
// browser), as JSON.
func (s *supervisor) status(w http.ResponseWriter, r *http.Request) {
	states := s.Workers.States()
	out := StatusAnswer{Profiles: make([]ProfileStatus, 0, len(states)), EventStreams: s.streams.count()}
	for _, st := range states {
		out.Profiles = append(out.Profiles, ProfileStatus{Profile: st.Profile, Running: st.Running, Crashes: st.Crashes,
			PID: st.PID, RetryAt: st.Retry, Error: st.Error})
	}
	web.WriteJSON(w, http.StatusOK, out)
}

// health answers 200 while the server runs, with its build and each profile worker's
// state, for a service manager or a monitor.
func (s *supervisor) health(w http.ResponseWriter, r *http.Request) {
	states := s.Workers.States()
	out := HealthAnswer{Status: "ok", Version: s.Version, Profiles: make([]ProfileStatus, 0, len(states))}
	for _, st := range states {
		out.Profiles = append(out.Profiles, ProfileStatus{Profile: st.Profile, Running: st.Running, Crashes: st.Crashes,
			PID: st.PID, RetryAt: st.Retry, Error: st.Error})
	}
	web.WriteJSON(w, http.StatusOK, out)
}

// proxyBuffers reuses the proxy's copy buffers.
type proxyBuffers struct{}

var proxyBufferPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (proxyBuffers) Get() []byte  { return *proxyBufferPool.Get().(*[]byte) }
func (proxyBuffers) Put(b []byte) { proxyBufferPool.Put(&b) }
