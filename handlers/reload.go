package handlers

import (
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"
)

// Built is a profile's server as a [Reloader] builds it: its dependencies, whether its
// sessions' work runs now, what stops that work (turns end cancelled and saved), and what
// releases the rest.
type Built struct {
	Deps        Deps
	Busy        func() bool // nil: never busy
	Stop, Close func()      // either may be nil
}

func (b *Built) busy() bool { return b != nil && b.Busy != nil && b.Busy() }

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
// config, which it loads again when the config file changed (checked at most once a second,
// when a request comes), without a restart:
//
//   - a config that loads replaces the server once no turn runs on it (until then the
//     pages say the change waits for the running turns); the old server's event streams
//     end, and the pages reconnect to the new one;
//   - a config that does not load leaves the last good server serving, its error on every
//     page; with no good server yet, the server without models serves (the sessions and
//     the workspace readable), until the file changes again.
type Reloader struct {
	o   ReloaderOptions
	log *slog.Logger

	mu       sync.Mutex // guards the fields below
	h        http.Handler
	full     *Built // the server of the last config that loaded; nil before one did
	degraded *Built // the server without models, while no config has loaded
	checked  time.Time
	file     os.FileInfo // the config file as it was when last loaded (or found broken)
	waiting  bool        // the file changed while a turn ran: it loads once none does
	stopped  bool
}

// NewReloader builds the profile's server (or the server without models).
func NewReloader(o ReloaderOptions) (*Reloader, error) {
	r := &Reloader{o: o, log: o.Log}
	if r.log == nil {
		r.log = slog.Default()
	}
	return r, r.load()
}

// load loads the config and serves what it builds; see [Reloader].
func (r *Reloader) load() error {
	file, _ := os.Stat(r.o.ConfigFile)
	b, cfgErr, err := r.o.Load()
	r.mu.Lock()
	r.file, r.checked, r.waiting = file, time.Now(), false
	r.mu.Unlock()
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case cfgErr != nil && r.full != nil:
		r.log.Warn("the profile's config changed and is invalid: the last good config keeps serving", "err", cfgErr)
		d := r.full.Deps
		d.Warning = "config.toml was changed, but it has an error, so the last good config keeps serving: " + cfgErr.Error() + ". Fix it; it loads on its own."
		r.h = New(d)
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
		r.h = New(d)
		return nil
	}
	old, degraded := r.full, r.degraded
	r.h, r.full, r.degraded = New(b.Deps), &b, nil
	if old != nil {
		r.log.Info("the profile's config changed: serving with the new one")
	}
	for _, o := range []*Built{old, degraded} {
		if o != nil {
			run(o.Stop)
			run(o.Close)
		}
	}
	return nil
}

// ServeHTTP serves req, after loading the config again when its file changed.
func (r *Reloader) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r.changed() {
		if err := r.load(); err != nil {
			r.log.Error("the profile's config changed, but its server did not start", "err", err)
		}
	}
	r.mu.Lock()
	h := r.h
	r.mu.Unlock()
	h.ServeHTTP(w, req)
}

// changed reports whether the config file changed since it was last loaded, and nothing
// runs that a new server would stop: a change while a turn runs is noted on the pages and
// loaded once none does.
func (r *Reloader) changed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || time.Since(r.checked) < time.Second {
		return false
	}
	r.checked = time.Now()
	st, err := os.Stat(r.o.ConfigFile)
	if err != nil || r.file != nil && os.SameFile(st, r.file) && st.ModTime().Equal(r.file.ModTime()) && st.Size() == r.file.Size() {
		return false
	}
	if r.full.busy() {
		if !r.waiting {
			r.waiting = true
			d := r.full.Deps
			d.Warning = "config.toml was changed: it takes effect once the running turns end."
			r.h = New(d)
		}
		return false
	}
	return true
}

// Stop stops the sessions' work: turns end cancelled and saved. Close then releases the
// rest.
func (r *Reloader) Stop() {
	r.mu.Lock()
	r.stopped = true
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
