package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Built is a profile's server as a [Reloader] builds it: its dependencies, what of its work
// a new server would end, how a changed config is applied to it in place, what stops its
// work (turns end cancelled and saved), and what releases the rest.
type Built struct {
	Deps Deps
	// Holding says what of the server's work a new server would end: whether a job (a turn,
	// a compaction) runs, and which sessions keep a process running (a bash session, an MCP
	// server). nil means nothing ever does.
	Holding func() (jobs bool, sessions []string)
	// Apply applies the config as it is now to this server, without ending any of its work,
	// as far as the change allows: it returns the deps under the new config, and pending,
	// the config keys whose change needs a new server (none when all of it is in use);
	// configErr when the config does not load. nil means every change needs a new server.
	Apply       func() (d Deps, pending []string, configErr error)
	Stop, Close func() // either may be nil
}

// holding says in words what of b's work a new server would end; "" when nothing.
func (b *Built) holding() string {
	if b == nil || b.Holding == nil {
		return ""
	}
	jobs, ids := b.Holding()
	var parts []string
	if jobs {
		parts = append(parts, "a turn runs")
	}
	shown := ids
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(ids)-5))
	}
	switch {
	case len(ids) == 1:
		parts = append(parts, "session "+ids[0]+" keeps a process running (a bash session or an MCP server)")
	case len(ids) > 1:
		parts = append(parts, fmt.Sprintf("%d sessions keep processes running (bash sessions or MCP servers): %s", len(ids), strings.Join(shown, ", ")))
	}
	return strings.Join(parts, " and ")
}

// ReloaderOptions configures a [Reloader].
type ReloaderOptions struct {
	// Load builds the profile's server from its config. configErr, when set, says the
	// config cannot be loaded. err is a failure no server can start without.
	Load func() (b Built, configErr, err error)
	// Degraded builds the server without models: the sessions and the workspace readable,
	// the config's error on every page, anything that needs a model refused.
	Degraded func(configErr error) (Built, error)
	// ConfigFile is the file whose change loads the config again.
	ConfigFile string
	Log        *slog.Logger
}

// Reloader serves a profile worker's requests: the profile's server, built from its
// config, which it applies again when the config file's content changed (looked at, at
// most once a second, when a request comes, in the background: the request is served
// meanwhile), without a restart and without ending what runs:
//
//   - a config that loads is applied to the running server ([Built.Apply]): what the change
//     allows (a model, a gateway's auth, the default model) is in use at once, and no turn,
//     bash session, MCP server or host connection ends. A change that needs a new server
//     (the MCP servers, say) waits until no turn runs and no session keeps a process
//     running, and the pages say so and why; then a new server replaces this one, its
//     event streams end and the pages reconnect to the new one;
//   - a config that does not load leaves the last good server serving, its error on every
//     page; with no good server yet, the server without models serves (the sessions and
//     the workspace readable), until the file changes again.
//
// A file whose bytes are the same (touched, or written again as it was) is no change.
type Reloader struct {
	o   ReloaderOptions
	log *slog.Logger

	looking sync.Mutex     // held by the one look at the config at a time
	looks   sync.WaitGroup // the looks under way; Stop waits for them

	mu       sync.Mutex // guards the fields below
	h        http.Handler
	full     *Built // the server of the last config that loaded; nil before one did
	degraded *Built // the server without models, while no config has loaded
	checked  time.Time
	sum      string   // the config file's digest as last loaded or applied ("" missing)
	pending  []string // the keys of an applied change that wait for a new server
	due      bool     // a new server is due, once nothing runs that it would end
	warning  string   // the warning the pages show
	stopped  bool
}

// NewReloader builds the profile's server (or the server without models).
func NewReloader(o ReloaderOptions) (*Reloader, error) {
	r := &Reloader{o: o, log: o.Log}
	if r.log == nil {
		r.log = slog.Default()
	}
	return r, r.load(digest(o.ConfigFile))
}

// digest is the SHA-256 of the file at path, read without blocking: "" for a missing file
// (no change to load), and a description of anything that is not a regular file or cannot
// be read, so that a FIFO or a directory put there is a change, whose load then says what
// is wrong.
func digest(path string) string {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		return "unreadable: " + err.Error()
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "unreadable: " + err.Error()
	}
	if !info.Mode().IsRegular() {
		return "not a regular file: " + info.Mode().String()
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unreadable: " + err.Error()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// load builds the server of the config as it is now (whose file's digest is sum) and
// serves it; see [Reloader]. A server it replaces is stopped and closed, unless work that
// the replacement would end began while it was built: then the new one is let go, and the
// change waits on.
func (r *Reloader) load(sum string) error {
	b, cfgErr, err := r.o.Load()
	var why string
	if err == nil && cfgErr == nil {
		r.mu.Lock()
		old := r.full
		r.mu.Unlock()
		why = old.holding() // without the lock: an inventory may take a moment
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sum = sum
	if err != nil {
		return err
	}
	switch {
	case cfgErr != nil && r.full != nil:
		r.log.Warn("the profile's config changed and is invalid: the last good config keeps serving", "err", cfgErr)
		r.pending, r.due = nil, false
		r.show(r.full.Deps, "config.toml was changed, but it has an error, so the last good config keeps serving: "+cfgErr.Error()+". Fix it; it loads on its own.")
		return nil
	case cfgErr != nil:
		if r.degraded == nil {
			d, err := r.o.Degraded(cfgErr)
			if err != nil {
				return err
			}
			r.degraded = &d
		}
		r.log.Warn("the profile's config is invalid: serving its sessions and workspace read-only until it is fixed", "err", cfgErr)
		d := r.degraded.Deps
		d.ConfigError = cfgErr.Error()
		r.h, r.warning, r.pending, r.due = New(d), "", nil, false
		return nil
	}
	old, degraded := r.full, r.degraded
	if why != "" {
		// Work began on the old server while the new one was built: the change waits on.
		run(b.Stop)
		run(b.Close)
		r.due = true
		r.waitFor(why)
		return nil
	}
	r.h, r.full, r.degraded, r.pending, r.due, r.warning = New(b.Deps), &b, nil, nil, false, ""
	if old != nil {
		r.log.Info("the profile's config changed: serving with a new server")
	}
	for _, o := range []*Built{old, degraded} {
		if o != nil {
			run(o.Stop)
			run(o.Close)
		}
	}
	return nil
}

// show serves d with warning on every page. Call with r.mu held.
func (r *Reloader) show(d Deps, warning string) {
	d.Warning = warning
	r.h, r.warning = New(d), warning
}

// waitFor shows, once per text, that the pending change waits while why. Call with r.mu
// held.
func (r *Reloader) waitFor(why string) {
	w := "config.toml was changed: the change needs the tools started again, which waits while " + why +
		"; nothing is stopped for it. It takes effect once they end, or when myco restarts."
	if len(r.pending) > 0 {
		w = "config.toml was changed. Its models and settings are in use; its change to " + strings.Join(r.pending, ", ") +
			" needs the tools started again, which waits while " + why + "; nothing is stopped for it. It takes effect once they end, or when myco restarts."
	}
	if w != r.warning {
		r.log.Info("the profile's config changed: a part of the change waits for the running work", "keys", r.pending, "waiting_for", why)
		r.show(r.full.Deps, w)
	}
}

// ServeHTTP serves req; at most once a second it has the config file looked at, in the
// background (see [Reloader]).
func (r *Reloader) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	if !r.stopped && time.Since(r.checked) >= time.Second {
		r.checked = time.Now()
		r.looks.Go(r.look)
	}
	h := r.h
	r.mu.Unlock()
	h.ServeHTTP(w, req)
}

// look applies the config file when its content changed, and a change that waits for a
// new server once nothing it would end runs. One look runs at a time; another that comes
// meanwhile has nothing to do.
func (r *Reloader) look() {
	if !r.looking.TryLock() {
		return
	}
	defer r.looking.Unlock()
	sum := digest(r.o.ConfigFile)
	r.mu.Lock()
	changed, waits, stopped := sum != "" && sum != r.sum, r.due, r.stopped
	r.mu.Unlock()
	switch {
	case stopped:
	case changed:
		r.apply(sum)
	case waits:
		r.replace()
	}
}

// apply applies the changed config (whose digest is sum) to the running server, or loads
// a new server when the running one cannot take it in place.
func (r *Reloader) apply(sum string) {
	r.mu.Lock()
	full := r.full
	r.mu.Unlock()
	if full == nil || full.Apply == nil {
		r.mu.Lock()
		r.pending = nil
		r.mu.Unlock()
		if err := r.load(sum); err != nil {
			r.log.Error("the profile's config changed, but its server did not start", "err", err)
		}
		return
	}
	d, pending, cfgErr := full.Apply()
	r.mu.Lock()
	r.sum = sum
	if cfgErr != nil {
		r.log.Warn("the profile's config changed and is invalid: the last good config keeps serving", "err", cfgErr)
		r.pending, r.due = nil, false
		r.show(full.Deps, "config.toml was changed, but it has an error, so the last good config keeps serving: "+cfgErr.Error()+". Fix it; it loads on its own.")
		r.mu.Unlock()
		return
	}
	full.Deps, r.pending, r.due = d, pending, len(pending) > 0
	r.log.Info("the profile's config changed: its models and settings are in use", "waiting", pending)
	r.show(d, "")
	r.mu.Unlock()
	if len(pending) > 0 {
		r.replace()
	}
}

// replace loads a new server for the change that waits for one, once nothing runs that it
// would end; until then the pages say what it waits for.
func (r *Reloader) replace() {
	r.mu.Lock()
	full, sum := r.full, r.sum
	r.mu.Unlock()
	if why := full.holding(); why != "" {
		r.mu.Lock()
		r.waitFor(why)
		r.mu.Unlock()
		return
	}
	if err := r.load(sum); err != nil {
		r.log.Error("the profile's config changed, but its new server did not start", "err", err)
	}
}

// Stop stops the sessions' work: turns end cancelled and saved. Close then releases the
// rest. A look at the config under way ends first.
func (r *Reloader) Stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.looks.Wait()
	r.mu.Lock()
	full, degraded := r.full, r.degraded
	r.mu.Unlock()
	for _, b := range []*Built{full, degraded} {
		if b != nil {
			run(b.Stop)
		}
	}
}

// Close releases what the servers hold.
func (r *Reloader) Close() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.looks.Wait()
	r.mu.Lock()
	full, degraded := r.full, r.degraded
	r.mu.Unlock()
	for _, b := range []*Built{full, degraded} {
		if b != nil {
			run(b.Close)
		}
	}
}

func run(f func()) {
	if f != nil {
		f()
	}
}
