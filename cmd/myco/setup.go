package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"myco/agent/model"
	"myco/agent/model/anthropic"
	"myco/agent/model/completions"
	"myco/agent/model/responses"
	"myco/config"
	"myco/hosts"
)

// profile is everything startup resolves once: paths, config, the selected model and a
// client for it.
type profile struct {
	// remotes returns the remote hosts and their options (from ~/.ssh/config).
	remotes func() ([]hosts.RemoteSpec, hosts.RemoteOptions, error)
	paths   config.Paths
	cfg     *config.Config
	model   config.Model
	client  *model.Client
}

// setup resolves the profile, loads .env and the config, validates it, and selects the
// model, all before any model call.
func (a *app) setup(o options) (*profile, error) {
	home, _ := os.UserHomeDir()
	if wd, err := os.Getwd(); err == nil {
		if err := config.LoadDotEnv(filepath.Join(wd, ".env"), os.LookupEnv, os.Setenv); err != nil {
			return nil, err
		}
	}
	paths, err := config.ResolvePaths(config.PathOptions{
		ProfileFlag: o.profile, ConfigFlag: o.config, Getenv: a.getenv, UserHome: home,
	})
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(paths.ConfigFile, paths.ConfigNamed)
	if err != nil {
		return nil, err
	}
	key, err := cfg.DefaultModel(o.model)
	if err != nil {
		return nil, err
	}
	m, err := cfg.Resolve(key)
	if err != nil {
		return nil, err
	}
	if err := paths.Ensure(); err != nil {
		return nil, err
	}
	if err := startWorkspace(paths, cfg); err != nil {
		return nil, err
	}
	client, err := newClient(m, home)
	if err != nil {
		return nil, err
	}
	pr := &profile{paths: paths, cfg: cfg, model: m, client: client}
	pr.remotes = func() ([]hosts.RemoteSpec, hosts.RemoteOptions, error) { return a.remoteOptions(pr) }
	return pr, nil
}

// protocols maps config protocol names to their wire implementations.
var protocols = map[string]model.Protocol{
	"anthropic-messages": anthropic.Protocol{},
	"openai-responses":   responses.Protocol{},
	"openai-completions": completions.Protocol{},
}

func newClient(m config.Model, home string) (*model.Client, error) {
	p, ok := protocols[m.Protocol]
	if !ok {
		return nil, fmt.Errorf("model %s: unknown protocol %q", m.Key, m.Protocol)
	}
	auth := m.Auth
	return &model.Client{
		Protocol:        p,
		BaseURL:         m.BaseURL,
		Key:             func() (string, error) { return auth.Key(os.LookupEnv, home) },
		HTTP:            &http.Client{Transport: http.DefaultTransport},
		MaxRequestBytes: m.MaxRequestBytes,
		Retry: model.RetryPolicy{
			MaxAttempts:    m.Retry.MaxAttempts,
			InitialBackoff: time.Duration(m.Retry.InitialBackoffMs) * time.Millisecond,
			MaxBackoff:     time.Duration(m.Retry.MaxBackoffMs) * time.Millisecond,
			Multiplier:     m.Retry.BackoffMultiplier,
		},
	}, nil
}
