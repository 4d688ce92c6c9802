// Package sessionstest has what the tests of the session service's users share: a model
// catalog served by one fake model, and a session service over it. The service's own tests
// have theirs inside the package.
package sessionstest

import (
	"log/slog"
	"slices"
	"testing"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/agent/model/anthropic"
	"myco.dev/sessions"
)

// Client is a model client of the fake model (or any anthropic-messages endpoint) at url,
// which tries each request once: a test's scripted failure is not retried away.
func Client(url string) *model.Client {
	return &model.Client{Protocol: anthropic.Protocol{}, BaseURL: url,
		Key: func() (string, error) { return "k", nil }, Retry: model.RetryPolicy{MaxAttempts: 1}}
}

// Models is a catalog whose keys are all served by one model client. Key K sends the
// model id "K-1". A key it does not have is a [sessions.UnknownModelError], as the real
// catalog's is.
type Models struct {
	Keys   []string // the first is the default
	Client *model.Client
	// Priced are the keys that have prices ([sessions.Pricer]); the others' cost is
	// unknown.
	Priced map[string]sessions.Prices
}

// NewModels is the catalog of keys served by c.
func NewModels(c *model.Client, keys ...string) Models { return Models{Keys: keys, Client: c} }

// Default returns the first key.
func (m Models) Default() string { return m.Keys[0] }

// Agent returns the configuration of key: its client, its model id, 1,000 output tokens.
func (m Models) Agent(key string, blocks []string) (sessions.AgentConfig, error) {
	if !slices.Contains(m.Keys, key) {
		return sessions.AgentConfig{}, &sessions.UnknownModelError{Key: key, Known: m.Keys}
	}
	return sessions.AgentConfig{ModelKey: key, Protocol: "anthropic-messages",
		Options: agent.Options{Model: m.Client, APIModel: key + "-1", MaxOutputTokens: 1000}}, nil
}

// Prices returns key's prices, when it has some.
func (m Models) Prices(key string) (sessions.Prices, bool) {
	p, ok := m.Priced[key]
	return p, ok
}

// Manager starts a session service with o, closed when the test ends. A store, a logger
// and models o leaves unset are a temporary directory's, the test's output and a catalog
// of "fake" that can reach no model.
func Manager(t testing.TB, o sessions.ManagerOptions) *sessions.Manager {
	t.Helper()
	if o.Store == nil {
		o.Store = sessions.NewStore(t.TempDir())
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	if o.Models == nil {
		o.Models = NewModels(Client("http://127.0.0.1:1"), "fake")
	}
	m, err := sessions.NewManager(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}
