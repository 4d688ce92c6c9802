package handlers

import (
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"
)

// Built is a profile's server as a [Reloader] builds it: its dependencies, what stops its
// sessions' work (turns end cancelled and saved), and what releases the rest.
type Built struct {
	Deps        Deps
	Stop, Close func() // either may be nil
}

// ReloaderOptions configures a [Reloader].
type ReloaderOptions struct {
	// Load builds the profile's server from its config. configErr, when set, says the
	// config cannot be loaded: the Reloader then serves Degraded's server until the config
	// file changes. err is a failure no server can start without.
	Load func() (b Built, configErr, err error)
	// Degraded builds the server without models: the sessions and the workspace readable,
	// the config's error on every page, anything that needs a model refused.
	Degraded func(configErr error) (Built, error)
	// ConfigFile is the file whose change makes a degraded server load again.
	ConfigFile string
	Log        *slog.Logger
}

// Reloader serves a profile worker's requests: the profile's server, built from its
// config; or, while that config cannot be loaded, the server without models, which loads
// the config again once its file changed (checked at most once a second, when a request
// comes), and becomes the full server without a restart.
type Reloader struct {
	o   ReloaderOptions
	log *slog.Logger

	mu       sync.Mutex // guards the fields below
	h        http.Handler
	full     *Built // nil while the config is invalid
	degraded *Built // the server without models, while the config is invalid
	failed   bool   // the config was invalid at the last load
	checked  time.Time
	file     os.FileInfo // the config file as it was when it failed
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

func (r *Reloader) load() error {
	b, cfgErr, err := r.o.Load()
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cfgErr != nil {
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
		r.h, r.failed, r.checked = New(d), true, time.Now()
		r.file, _ = os.Stat(r.o.ConfigFile)
		return nil
	}
	r.h, r.full, r.failed = New(b.Deps), &b, false
	if r.degraded != nil {
		run(r.degraded.Stop)
		run(r.degraded.Close)
		r.degraded = nil
	}
	return nil
}

// ServeHTTP serves req; while the config is invalid it first loads it again when its file
// changed.
func (r *Reloader) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	retry := r.failed && !r.stopped && time.Since(r.checked) >= time.Second
	if retry {
		r.checked = time.Now()
		st, err := os.Stat(r.o.ConfigFile)
		retry = err == nil && (r.file == nil || !os.SameFile(st, r.file) || !st.ModTime().Equal(r.file.ModTime()) || st.Size() != r.file.Size())
	}
	r.mu.Unlock()
	if retry {
		if err := r.load(); err != nil {
			r.log.Error("the profile's config was fixed, but its server did not start", "err", err)
		}
	}
	r.mu.Lock()
	h := r.h
	r.mu.Unlock()
	h.ServeHTTP(w, req)
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
