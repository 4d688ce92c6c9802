package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"

	"myco.dev/config"
	"myco.dev/docs"
	"myco.dev/engine"
	"myco.dev/internal/reaper"
	"myco.dev/internal/termtext"
)

// paths resolves o's profile from the flags and the environment: its name, MYCO_HOME and
// config file.
func (a *app) paths(o options) (config.Paths, error) {
	home, _ := os.UserHomeDir()
	return config.ResolvePaths(config.PathOptions{ProfileFlag: o.profile, ProfileSet: o.profileSet, ConfigFlag: o.config,
		Getenv: a.getenv, UserHome: home})
}

// setup resolves o's profile and opens it with what this process has (see [engine.Open]).
func (a *app) setup(o options) (*engine.Profile, error) {
	paths, err := a.paths(o)
	if err != nil {
		return nil, err
	}
	return engine.Open(a.openOptions(paths, o.model))
}

// openOptions are what a profile's start takes from this process.
func (a *app) openOptions(paths config.Paths, model string) engine.OpenOptions {
	home, _ := os.UserHomeDir()
	wd, _ := os.Getwd()
	return engine.OpenOptions{Paths: paths, Model: model, Home: home, Dir: wd, Environ: os.Environ(), LookupEnv: os.LookupEnv,
		Version: version, Build: buildInfo().String(), Manual: docs.FS, Warn: a.warn}
}

// newReaper returns this process's reaper: myco itself in its reaper mode, started before
// the first tool process, which kills every tool process group still running when this
// process dies, however it dies.
// A reaper that cannot start is logged on log: the tools then run unprotected.
func newReaper(log *slog.Logger) *reaper.Reaper {
	path := "/proc/self/exe" // this binary, even after an upgrade replaced its file
	if runtime.GOOS != "linux" {
		path, _ = os.Executable()
	}
	return reaper.New(reaper.Options{Path: path, Argv: []string{os.Args[0], "--mode", "reaper"}, Log: log})
}

// warn prints a one-line warning on stderr, made safe for the terminal.
func (a *app) warn(msg string) {
	fmt.Fprintln(a.stderr, "myco: warning:", termtext.Safe(msg))
}
