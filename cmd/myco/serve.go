package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"myco.dev/config"
	"myco.dev/handlers"
	"myco.dev/hosts"
	"myco.dev/internal/peercred"
	"myco.dev/internal/web"
	"myco.dev/profiles"
	"myco.dev/static"
)

// defaultAddr is where the server listens unless --addr says otherwise.
const defaultAddr = "127.0.0.1:8080"

// serve runs the browser server (myco with no mode): the supervisor that owns the loopback
// port and serves every profile of MYCO_HOME at /profiles/NAME/, each through a worker
// process of its own (myco --mode profile-worker) started on its first request. The first
// line on stdout is the URL of --profile's instance, which / redirects to and which
// --model and --config apply to. SIGINT, SIGTERM and SIGHUP stop it: the workers' stdin is
// closed, and each stops its turns, saves them and releases its tools.
func (a *app) serve(o options) int {
	addr := o.addr
	if addr == "" {
		addr = defaultAddr
	}
	if err := loopbackOnly(addr); err != nil {
		fmt.Fprintln(a.stderr, "myco:", err)
		return exitUsage
	}
	home, _ := os.UserHomeDir()
	paths, err := config.ResolvePaths(config.PathOptions{ProfileFlag: o.profile, ProfileSet: o.profileSet, ConfigFlag: o.config,
		Getenv: a.getenv, UserHome: home})
	if err != nil {
		return a.fail(err)
	}
	log := a.log
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return a.fail(fmt.Errorf("listen on %s: %w", addr, err))
	}
	port := web.PortOf(ln.Addr())
	// The URL names the address actually bound: [::1] when that is where it listens.
	base := "http://" + net.JoinHostPort(ln.Addr().(*net.TCPAddr).IP.String(), port)
	token, tokenFile := "", ""
	switch {
	case o.auth == "token" || o.auth == "" && !peercred.TCPAvailable():
		// The owner of a connection cannot be told here (or the user asked for the
		// token): the server asks for a secret that only this user can read, carried once
		// in the printed URL, then in a cookie.
		if err := os.MkdirAll(paths.Home, 0o700); err != nil {
			return a.fail(err)
		}
		tokenFile = filepath.Join(paths.Home, "server-"+port+".token")
		if token, err = newToken(tokenFile); err != nil {
			return a.fail(err)
		}
		defer os.Remove(tokenFile)
		log.Warn("token mode: the server cannot tell which user a connection comes from, so it admits whoever has its token. " +
			"Browsers send a cookie of 127.0.0.1 to every port of it, so another user's server on this machine that your browser visits " +
			"receives the token: token mode is not safe on a machine shared with users you do not trust (see docs/security.md)")
	case o.auth == "" || o.auth == "owner":
		if !peercred.TCPAvailable() {
			return a.fail(errors.New("--auth owner: this system does not tell which user a connection comes from (no /proc/net/tcp); use --auth token"))
		}
	default:
		fmt.Fprintf(a.stderr, "myco: --auth %q: want owner or token\n", o.auth)
		return exitUsage
	}
	exe, err := os.Executable()
	if err != nil {
		return a.fail(fmt.Errorf("find the running myco: %w", err))
	}
	pool, err := profiles.New(profiles.Options{
		Stderr: a.stderr, Log: log,
		Command: func(name string) ([]string, []string) { return a.workerCommand(exe, o, paths, name, base, tokenFile) },
	})
	if err != nil {
		return a.fail(err)
	}
	defer pool.Close()
	sup := profiles.NewSupervisor(profiles.SupervisorOptions{
		Workers: pool, Default: paths.Profile, Assets: static.New("/static/"),
		Exists: func(name string) bool {
			st, err := os.Stat(filepath.Join(paths.Home, "profiles", name))
			return err == nil && st.IsDir()
		},
		Port: port, UID: os.Getuid(), Token: token, Log: log,
	})
	srv := web.NewServer(sup, log)
	// The launch profile starts at once, so that its config errors show here too.
	startCtx, cancelStart := context.WithTimeout(context.Background(), 60*time.Second)
	if err := pool.Start(startCtx, paths.Profile); err != nil {
		log.Warn("the launch profile did not start; its pages say why", "profile", paths.Profile, "err", err)
	}
	cancelStart()
	url := fmt.Sprintf("%s/profiles/%s/", base, paths.Profile)
	if token != "" {
		url += "?token=" + token
	}
	fmt.Fprintln(a.stdout, url)
	log.Info("serving", "addr", ln.Addr().String(), "profile", paths.Profile, "home", paths.Home)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	served := make(chan error, 1)
	// Connections for a profile go to its worker whole; the rest are served here.
	go func() { served <- srv.Serve(sup.Listener(ln, pool)) }()
	select {
	case err := <-served:
		return a.fail(fmt.Errorf("serve: %w", err))
	case <-ctx.Done():
	}
	stop()
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
	return exitOK
}

// workerCommand is the command line and environment of profile name's worker: the same
// binary, with the profile's variables set once (MYCO_PROFILE, an absolute MYCO_HOME, the
// instance's MYCO_SERVER_URL under base, and in token mode MYCO_SERVER_TOKEN_FILE). The
// launch overrides (--model, --config) go to the launch profile's worker only;
// MYCO_CONFIG, which names one file, too.
func (a *app) workerCommand(exe string, o options, paths config.Paths, name, base, tokenFile string) ([]string, []string) {
	argv := append([]string{exe, "--mode", "profile-worker", "--profile", name}, logArgs(o)...)
	launch := name == paths.Profile
	if launch && o.model != "" {
		argv = append(argv, "--model", o.model)
	}
	if launch && paths.ConfigNamed {
		argv = append(argv, "--config", paths.ConfigFile)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "MYCO_PROFILE" || k == "MYCO_HOME" || k == "MYCO_SERVER_URL" || k == "MYCO_CONFIG" ||
			k == "MYCO_SERVER_TOKEN" || k == "MYCO_SERVER_TOKEN_FILE"
	})
	env = append(env, "MYCO_PROFILE="+name, "MYCO_HOME="+paths.Home, "MYCO_SERVER_URL="+base+"/profiles/"+name)
	if tokenFile != "" {
		env = append(env, "MYCO_SERVER_TOKEN_FILE="+tokenFile)
	}
	return argv, env
}

// listProfiles returns the names of the profiles under home, sorted.
func listProfiles(home string) []string {
	ents, err := os.ReadDir(filepath.Join(home, "profiles"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && config.CheckProfileName(e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// loopbackOnly refuses an address that is not a loopback one: the server drives an agent
// that runs commands, and is reached from elsewhere through an SSH port-forward.
func loopbackOnly(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: want HOST:PORT, e.g. %s (%v)", addr, defaultAddr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("--addr %q: bad port %q", addr, port)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q is not a loopback address: myco serves only on loopback (127.0.0.1, ::1 or localhost); reach it from another machine through an SSH port-forward (ssh -L 8080:127.0.0.1:8080 HOST)", addr)
	}
	return nil
}

// tokenHeader is how the token file holds the secret: the one header line that carries
// it, so that a tool sends it with curl -H @FILE and it never reaches a command line.
const tokenHeader = "Authorization: Bearer "

// newToken writes a fresh secret (a new one at every start) to path, readable only by the
// user, and returns it. A file left there is replaced, never written through: a link or
// another user's file in its place is removed first, and the new one is made exclusively.
func newToken(path string) (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	t := hex.EncodeToString(b[:])
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("replace the server token: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("write the server token: %w", err)
	}
	_, err = f.WriteString(tokenHeader + t + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write the server token: %w", err)
	}
	return t, nil
}

// readToken reads the secret from the token file at path.
func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the server token: %w", err)
	}
	t, ok := strings.CutPrefix(strings.TrimSpace(string(b)), tokenHeader)
	if !ok || t == "" {
		return "", fmt.Errorf("read the server token: %s does not hold an %q line", path, strings.TrimSpace(tokenHeader))
	}
	return t, nil
}

// catalogInfo lists the catalog's models for the pages.
func catalogInfo(p *profile) []handlers.ModelInfo {
	var out []handlers.ModelInfo
	for _, key := range p.cfg.ModelKeys() {
		if m, err := p.cfg.Resolve(key); err == nil {
			out = append(out, handlers.ModelInfo{Key: m.Key, ContextWindow: m.ContextWindow, MaxImageBase64Bytes: m.MaxImageBase64Bytes})
		}
	}
	return out
}

// hostStates lists the remote hosts' states for the status bar.
func hostStates(h *hosts.Harness) []handlers.HostState {
	var out []handlers.HostState
	for _, st := range h.Statuses() {
		out = append(out, handlers.HostState{Name: st.Alias, State: string(st.State), Error: st.Err})
	}
	return out
}
