package profiles

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
	"slices"
	"strings"
	"time"

	"myco.dev/internal/handoff"
	"myco.dev/internal/peercred"
	"myco.dev/internal/web"
)

// WorkerChannel returns a worker's end of the channel to its supervisor: the socket it
// inherited on descriptor [WorkerFD], with no name to connect to, checked to come from the
// process that started this one, as it must.
func WorkerChannel() (*net.UnixConn, error) {
	ch, err := handoff.Inherit(WorkerFD)
	if err != nil {
		return nil, fmt.Errorf("--mode profile-worker is started by myco's server, which passes it a channel on descriptor %d: %w", WorkerFD, err)
	}
	if err := peercred.CheckUnix(ch, os.Getuid(), os.Getppid()); err != nil && !errors.Is(err, peercred.ErrUnavailable) {
		ch.Close()
		return nil, fmt.Errorf("the channel on descriptor %d is not from the server that started this worker: %w", WorkerFD, err)
	}
	return ch, nil
}

// WorkerOptions configure [ServeWorker].
type WorkerOptions struct {
	Profile string       // the profile served, for the log
	Handler http.Handler // the profile's server
	// Stop stops the profile's work (running turns are cancelled and saved) before the
	// server shuts down.
	Stop   func()
	Stdin  io.Reader // the supervisor's pipe, which it closes to stop the worker
	Stdout io.Writer // where "ready" is said, with Build
	// Build is the worker's build identity, which it says with "ready": the supervisor
	// refuses a worker of another build than its own.
	Build string
	Log   *slog.Logger // nil means slog.Default()
}

// ServeWorker is a worker's side of the pool: it serves o.Handler over ch, the channel
// from [WorkerChannel], on which the supervisor hands it whole connections (their first
// request read, so that a page costs no second hop) and dials it for what it forwards,
// and says "ready" on o.Stdout once it serves. When ctx ends, o.Stdin closes (the
// supervisor stops it, or died) or the supervisor's end of ch is gone, it calls o.Stop
// and shuts the server down, giving requests in flight a moment. An error is one of
// serving, before any of that.
func ServeWorker(ctx context.Context, ch *net.UnixConn, o WorkerOptions) error {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	handed := handoff.Listen(ch)
	srv := web.NewServer(begin(o.Handler), o.Log)
	connContext := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		ctx = connContext(ctx, c)
		if hc, ok := c.(*handoff.Conn); ok {
			ctx = context.WithValue(ctx, handedKey{}, hc)
		}
		return ctx
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(handed) }()
	fmt.Fprintln(o.Stdout, strings.TrimSpace("ready "+o.Build))

	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, o.Stdin)
		close(eof)
	}()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	case <-eof:
	case <-handed.Done(): // the supervisor is gone
	}
	o.Log.Info("stopping: running turns are cancelled and saved") // the worker's logger names its profile
	o.Stop()
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		o.Log.Warn("serve", "err", err)
	}
	return nil
}

type handedKey struct{}

// begin tells the supervisor, for each request on a connection it handed over, that the
// request waits for its answer: should this worker die before the answer begins, the
// supervisor, which keeps its copy of the connection, answers it (502 worker_failed).
func begin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hc, ok := r.Context().Value(handedKey{}).(*handoff.Conn); ok {
			hc.Begin(r.Method + " " + r.URL.Path)
		}
		next.ServeHTTP(w, r)
	})
}

// WorkerEnv is the environment of profile name's worker: environ with the profile's
// variables set once, MYCO_PROFILE, an absolute MYCO_HOME (home), the instance's
// MYCO_SERVER_URL (url) and, in token mode, MYCO_SERVER_TOKEN_FILE (tokenFile), which the
// worker reads with [WorkerServer] and its tools get. MYCO_CONFIG, which names one file,
// is dropped: it is the launch profile's, whose worker is given --config instead.
func WorkerEnv(environ []string, home, name, url, tokenFile string) []string {
	env := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "MYCO_PROFILE" || k == "MYCO_HOME" || k == "MYCO_SERVER_URL" || k == "MYCO_CONFIG" ||
			k == "MYCO_SERVER_TOKEN" || k == "MYCO_SERVER_TOKEN_FILE"
	})
	env = append(env, "MYCO_PROFILE="+name, "MYCO_HOME="+home, "MYCO_SERVER_URL="+url)
	if tokenFile != "" {
		env = append(env, "MYCO_SERVER_TOKEN_FILE="+tokenFile)
	}
	return env
}

// Server is how a worker's instance is reached, as its supervisor set it in [WorkerEnv].
type Server struct {
	URL, Port string // http://127.0.0.1:PORT/profiles/NAME, and its port
	// TokenFile, in token mode, is the file holding the header that carries Token.
	TokenFile, Token string
}

// WorkerServer reads the instance's URL and token that the supervisor set for this
// worker (see [WorkerEnv]) through getenv, for the pages' checks and the tools.
func WorkerServer(getenv func(string) string) (Server, error) {
	s := Server{URL: getenv("MYCO_SERVER_URL"), TokenFile: getenv("MYCO_SERVER_TOKEN_FILE")}
	u, err := url.Parse(s.URL)
	if err != nil || u.Port() == "" {
		return s, fmt.Errorf("MYCO_SERVER_URL %q is not this instance's http://127.0.0.1:PORT/profiles/NAME URL", s.URL)
	}
	s.Port = u.Port()
	if s.TokenFile != "" {
		if s.Token, err = web.ReadTokenFile(s.TokenFile); err != nil {
			return s, err
		}
	}
	return s, nil
}
