package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"myco.dev/cli"
	"myco.dev/config"
	"myco.dev/engine"
	"myco.dev/handlers"
	"myco.dev/hosts"
	"myco.dev/hosts/sandbox"
)

// terminal runs the terminal front end f (package cli) on the session service of o's
// profile. With serve (myco -p, the chat), the profile's API is served on a loopback port
// of this process while f runs, and the local tools get its MYCO_SERVER_URL, so that an
// agent can start child sessions as the system prompt says (see [engine.Options]).
func (a *app) terminal(o options, serve bool, f func(ctx context.Context, e *engine.Engine, std cli.IO, co cli.Options) int) int {
	p, err := a.setup(o)
	if err != nil {
		return a.setupFailed(o, err)
	}
	log, closeLog := a.logs.File(filepath.Join(p.Paths.ProfileDir, "myco.log"), a.stderr, a.warn)
	defer closeLog()
	a.setLog(log)
	eo := engine.Options{Reaper: newReaper(a.log), Wait: true, Log: a.log,
		Guard: &engine.GuardOptions{Exe: sandbox.FenceExe(), Mode: o.approvalMode, Allow: o.allow, NonInteractive: o.promptSet}}
	if serve {
		eo.API = func(e *engine.Engine, port, token string) (http.Handler, error) {
			d, err := a.deps(p.Paths, port, token)
			if err != nil {
				return nil, err
			}
			return handlers.New(withEngine(d, p, e)), nil
		}
	}
	e, err := engine.New(p, eo)
	if err != nil {
		return a.setupFailed(o, err)
	}
	defer e.Close()
	if o.promptSet && o.resume == "" {
		e.Warm(o.model) // -p's request follows at once: its connection opens meanwhile
	}
	wd, _ := os.Getwd()
	return f(context.Background(), e, a.std(), cli.Options{
		Model: o.model, Resume: o.resume, JSON: o.json, Result: o.result, MaxCost: o.maxCost,
		Term: a.getenv("TERM"), NoColor: a.getenv("NO_COLOR") != "",
		History: filepath.Join(p.Paths.ProfileDir, "cli-history"), Hosts: e.Harness, MCP: e.Harness,
		Project: e.Harness, Dir: wd,
	})
}

// setupFailed reports a profile that could not start: a config error is a usage error
// (exit 2, code config_invalid), anything else a failure (exit 1); under -p --json or
// --output-format json, as the last object on stdout too.
func (a *app) setupFailed(o options, err error) int {
	var ce *config.Error
	var empty *config.EmptyCatalogError
	var unknown *config.UnknownModelError
	isConfig := errors.As(err, &ce) || errors.As(err, &empty) || errors.As(err, &unknown)
	if !o.promptSet {
		a.fail(err)
		if isConfig {
			return exitUsage
		}
		return cli.ExitError
	}
	return cli.SetupFailed(a.std(), o.json, o.result, isConfig, err)
}

func (a *app) std() cli.IO { return cli.IO{Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr} }

// oneShot runs `myco -p`; the prompt is read, and refused when empty, before the profile
// starts.
func (a *app) oneShot(o options) int {
	prompt, err := cli.PromptText(o.prompt, a.stdin)
	switch {
	case errors.Is(err, cli.ErrEmptyPrompt):
		fmt.Fprintln(a.stderr, "myco:", err)
		return exitUsage
	case err != nil:
		return a.fail(err)
	}
	return a.terminal(o, true, func(ctx context.Context, e *engine.Engine, std cli.IO, co cli.Options) int {
		return cli.Prompt(ctx, e.Sessions, std, prompt, co)
	})
}

// compactCmd runs myco --compact ID.
func (a *app) compactCmd(o options) int {
	return a.terminal(o, false, func(ctx context.Context, e *engine.Engine, std cli.IO, co cli.Options) int {
		return cli.Compact(ctx, e.Sessions, std, o.compact, co)
	})
}

// chat runs myco --mode cli.
func (a *app) chat(o options) int {
	return a.terminal(o, true, func(ctx context.Context, e *engine.Engine, std cli.IO, co cli.Options) int {
		return cli.Chat(ctx, e.Sessions, std, co)
	})
}

// hostsCmd runs `myco hosts [check|install ALIAS]` on the hosts of ~/.ssh/config.
func (a *app) hostsCmd(args []string) int {
	home, _ := os.UserHomeDir()
	specs, path, err := engine.SSHRemotes(home)
	if err != nil {
		return a.fail(err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer cancel()
	self, _ := os.Executable()
	wd, _ := os.Getwd()
	build := buildInfo().String()
	return cli.HostsCommand(ctx, a.std(), args, cli.HostsOptions{Specs: specs, SSHConfig: path, Self: self, Version: build,
		Remote: func() hosts.RemoteOptions {
			attach := config.DefaultAttachTimeoutSecs * time.Second
			if paths, err := a.paths(options{}); err == nil {
				if attach, err = engine.AttachTimeout(paths); err != nil {
					a.fail(err) // and go on with the default
				}
			}
			return engine.RemoteOptions(engine.OpenOptions{Build: build, Dir: wd}, 5<<20, attach, nil, a.log)
		}})
}
