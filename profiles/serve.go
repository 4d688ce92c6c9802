package profiles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"myco.dev/internal/peercred"
	"myco.dev/internal/web"
	"myco.dev/static"
)

// DefaultAddr is where the server listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8080"

// ServeOptions configures [Serve].
type ServeOptions struct {
	Addr   string // a loopback HOST:PORT (see [CheckAddr]); port 0 picks one
	Home   string // MYCO_HOME: its profiles are served, and the token file goes there
	Launch string // the profile that / redirects to, started at once
	// Auth is how the server tells its user: "owner" (the connecting socket's user id, told
	// by the kernel), "token" (a secret in the printed URL, then a cookie), or "" for owner
	// where the system tells it, else token.
	Auth string
	// Worker returns the command line of profile name's worker; its environment is
	// Environ with the profile's variables (see [WorkerEnv]).
	Worker  func(name string) (argv []string)
	Environ []string  // the process's environment, which the workers start from
	Version string    // the build, for /healthz
	Build   string    // the build's identity, which every worker must have: "" checks none
	Pprof   bool      // serve net/http/pprof at /debug/pprof/ (and each worker's under its profile)
	Stdout  io.Writer // the URL to open is its first line
	Stderr  io.Writer // the workers' stderr
	LogJSON bool      // the log is JSON: the workers' other lines are made log objects too
	// Hint, when set, is told how to forward the port bound ([ForwardHint]) in a sentence;
	// the "serving" log line has it anyway, as its forward attribute.
	Hint io.Writer
	// ApproveKey, when set, makes Hint also say the link that gives a browser the approval
	// capability (the person started the server on a terminal: they hold the key anyway).
	ApproveKey string
	Log        *slog.Logger
}

// CheckAddr refuses an address that is not a loopback one: the server drives an agent
// that runs commands, and is reached from elsewhere through an SSH port-forward. from
// names where addr came from in the error: "--addr", "MYCO_ADDR".
func CheckAddr(from, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: want HOST:PORT, e.g. %s (%v)", from, addr, DefaultAddr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("%s %q: bad port %q", from, addr, port)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		if port == "0" {
			port = "PORT"
		}
		return fmt.Errorf("%s %q is not a loopback address: myco serves only on loopback (127.0.0.1, ::1 or localhost); "+
			"serve on 127.0.0.1:%s and reach it from another machine through an SSH port-forward (%s)",
			from, addr, port, ForwardHint(net.JoinHostPort("127.0.0.1", port)))
	}
	return nil
}

// ForwardHint is the command that forwards the server at addr, the loopback HOST:PORT it
// is bound to, to the same port of another machine: "ssh -L 8080:127.0.0.1:8080
// THIS-HOST", run there.
func ForwardHint(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return "ssh -L " + port + ":" + addr + " THIS-HOST"
}

// Serve runs the browser server until ctx ends: the supervisor on the loopback port,
// serving every profile of o.Home at /profiles/NAME/, each through a worker process of its
// own, started on its first request (the launch profile's at once, so that its config
// errors show at start). The first line on o.Stdout is the URL of the launch profile. When
// ctx ends, the workers' stdin is closed (each stops its turns, saves them and releases
// its tools) and Serve returns nil.
func Serve(ctx context.Context, o ServeOptions) error {
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	// One server per MYCO_HOME: the lock first, so that a second server names the first
	// rather than failing on its port.
	lock, err := lockHome(o.Home)
	if err != nil {
		return err
	}
	defer lock.release()
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return err // "listen tcp ADDR: bind: address already in use" says it all
	}
	port := web.PortOf(ln.Addr())
	// The URL names the address actually bound: [::1] when that is where it listens.
	base := "http://" + net.JoinHostPort(ln.Addr().(*net.TCPAddr).IP.String(), port)
	token, tokenFile := "", ""
	switch {
	case o.Auth == "token" || o.Auth == "" && !peercred.TCPAvailable():
		// The owner of a connection cannot be told here (or the user asked for the token):
		// the server asks for a secret that only this user can read, carried once in the
		// printed URL, then in a cookie.
		if err := os.MkdirAll(o.Home, 0o700); err != nil {
			return err
		}
		tokenFile = filepath.Join(o.Home, "server-"+port+".token")
		if token, err = web.NewTokenFile(tokenFile); err != nil {
			return err
		}
		defer os.Remove(tokenFile)
		log.Warn("token mode: the server cannot tell which user a connection comes from, so it admits whoever has its token. " +
			"Browsers send a cookie of 127.0.0.1 to every port of it, so another user's server on this machine that your browser visits " +
			"receives the token: token mode is not safe on a machine shared with users you do not trust (see docs/security.md)")
	case !peercred.TCPAvailable():
		return errors.New("--auth owner: this system does not tell which user a connection comes from (no /proc/net/tcp); use --auth token")
	}
	pool, err := New(Options{
		Stderr: o.Stderr, LogJSON: o.LogJSON, Build: o.Build, Log: log,
		Command: func(name string) ([]string, []string) {
			return o.Worker(name), WorkerEnv(o.Environ, o.Home, name, base+"/profiles/"+name, tokenFile)
		},
	})
	if err != nil {
		return err
	}
	defer pool.Close()
	sup := NewSupervisor(SupervisorOptions{
		Workers: pool, Default: o.Launch, Assets: static.New("/static/"),
		Exists: func(name string) bool {
			st, err := os.Stat(filepath.Join(o.Home, "profiles", name))
			return err == nil && st.IsDir()
		},
		Port: port, UID: os.Getuid(), Token: token, Log: log, Version: o.Version, Pprof: o.Pprof,
	})
	srv := web.NewServer(sup, log)
	startCtx, cancelStart := context.WithTimeout(ctx, 60*time.Second)
	if err := pool.Start(startCtx, o.Launch); err != nil {
		log.Warn("the launch profile did not start; its pages say why", "profile", o.Launch, "err", err)
	}
	cancelStart()
	url := fmt.Sprintf("%s/profiles/%s/", base, o.Launch)
	if token != "" {
		url += "?token=" + token
	}
	fmt.Fprintln(o.Stdout, url)
	lock.serving(fmt.Sprintf("%s/profiles/%s/", base, o.Launch)) // never the token
	// The port actually bound: with port 0 it is the one the system picked.
	hint := ForwardHint(strings.TrimPrefix(base, "http://"))
	if o.Hint != nil {
		fmt.Fprintf(o.Hint, "myco: to open it from another machine, forward its port there first: %s\n", hint)
		if o.ApproveKey != "" {
			fmt.Fprintf(o.Hint, "myco: to answer approvals from a browser, open this link there once (it keeps the key in a cookie; anyone with the link can answer approvals): %s/profiles/%s/approve?key=%s\n", base, o.Launch, o.ApproveKey)
		}
	}
	log.Info("serving", "addr", ln.Addr().String(), "profile", o.Launch, "home", o.Home, "forward", hint)

	served := make(chan error, 1)
	// Connections for a profile go to its worker whole; the rest are served here.
	go func() { served <- srv.Serve(sup.Listener(ln, pool)) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("stopping: the profiles stop their turns and save them")
	pool.Close() // turns end cancelled and checkpointed; their streams say so
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		srv.Close() // event streams do not end on their own
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("serve", "err", err)
	}
	return nil
}

// List returns the names of the profiles under home, sorted.
func List(home string) []string {
	ents, err := os.ReadDir(filepath.Join(home, "profiles"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && profileName.MatchString(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}
