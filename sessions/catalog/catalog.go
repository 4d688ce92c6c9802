package catalog

import (
	"context"
	"sync"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/config"
	"myco.dev/sessions"
)

// Options configure a [Catalog].
type Options struct {
	Config *config.Config
	// Default is the catalog key of new sessions: --model, else the config's.
	Default string
	Env     config.Env // where credentials are looked up, at each request
	Home    string     // the user's home directory, for ~/ in auth file paths
	// Tools is what the system prompt tells of the tools; nil means none.
	Tools Tools
	// Observe, when set, is told of each attempt of each model's requests, with the
	// model's key (see [model.Client.Observe]): a profile worker's metrics.
	Observe func(key string, a model.Attempt)
}

// Tools is what the system prompt tells of the tools: their specifications and the hosts
// they run on. *hosts.Harness satisfies it.
type Tools interface {
	Specs() []model.ToolSpec
	Hosts() []string
}

// Catalog resolves the config's model keys into agent configurations, with one model
// client per key, kept for the catalog's life. It is a [sessions.Models] and a
// [sessions.ModelLister], safe for concurrent use.
type Catalog struct {
	o Options

	mu      sync.Mutex // guards clients
	clients map[string]*model.Client
}

var (
	_ sessions.Models       = (*Catalog)(nil)
	_ sessions.ModelLister  = (*Catalog)(nil)
	_ sessions.ModelChecker = (*Catalog)(nil)
	_ sessions.Pricer       = (*Catalog)(nil)
)

// Prices returns the prices of model key, or false when the catalog has none for it.
func (c *Catalog) Prices(key string) (sessions.Prices, bool) {
	m, err := c.o.Config.Resolve(key)
	if err != nil || m.Prices == nil {
		return sessions.Prices{}, false
	}
	p := m.Prices
	return sessions.Prices{Input: p.Input, Output: p.Output, CacheRead: p.CacheRead, CacheWrite: p.CacheWrite}, true
}

// New returns the catalog of o.Config.
func New(o Options) *Catalog { return &Catalog{o: o, clients: map[string]*model.Client{}} }

// Default returns the catalog key of new sessions.
func (c *Catalog) Default() string { return c.o.Default }

// List lists the catalog's models in order.
func (c *Catalog) List() []sessions.ModelInfo {
	out := []sessions.ModelInfo{}
	for _, key := range c.o.Config.ModelKeys() {
		if m, err := c.o.Config.Resolve(key); err == nil {
			out = append(out, sessions.ModelInfo{Key: m.Key, ContextWindow: m.ContextWindow, MaxImageBase64Bytes: m.MaxImageBase64Bytes})
		}
	}
	return out
}

// Check returns the error [Catalog.Agent] would give for key: one naming a key the
// catalog does not have, or a model whose client cannot be made (its credential).
func (c *Catalog) Check(key string) error {
	m, err := c.o.Config.Resolve(key)
	if err != nil {
		return err
	}
	_, err = c.client(m)
	return err
}

// Warm opens the connection of model key ("" means the default) to its endpoint, TLS
// handshake included, for its first request to take ([model.Client.Warm]); it returns when
// the connection is open, or failed (left to the request), or ctx ends.
func (c *Catalog) Warm(ctx context.Context, key string) {
	if key == "" {
		key = c.o.Default
	}
	m, err := c.o.Config.Resolve(key)
	if err != nil {
		return
	}
	if cl, err := c.client(m); err == nil {
		cl.Warm(ctx)
	}
}

// Agent returns the configuration of a run of model key whose system prompt carries
// blocks, or an error naming a key the catalog does not have.
func (c *Catalog) Agent(key string, blocks []string) (sessions.AgentConfig, error) {
	m, err := c.o.Config.Resolve(key)
	if err != nil {
		return sessions.AgentConfig{}, err
	}
	client, err := c.client(m)
	if err != nil {
		return sessions.AgentConfig{}, err
	}
	po := agent.PromptOptions{ContextWindow: m.ContextWindow, AutoCompactAt: m.AutoCompactAt, Blocks: blocks}
	if c.o.Tools != nil {
		po.Tools, po.Hosts = c.o.Tools.Specs(), c.o.Tools.Hosts()
	}
	return sessions.AgentConfig{
		Options: agent.Options{
			Model: client, APIModel: m.APIID, MaxOutputTokens: m.MaxOutputTokens, Thinking: m.Thinking, Effort: m.Effort,
			System: agent.SystemPrompt(po), MaxTruncatedResumes: m.MaxTruncatedResumes, ContextWindow: m.ContextWindow,
		},
		ModelKey: m.Key, Protocol: m.Protocol, Endpoint: endpoint(c.o.Config, m), ContextWindow: m.ContextWindow, AutoCompactAt: m.AutoCompactAt,
		CompactionMaxRequests: c.o.Config.CompactionMaxRequests, MaxImageBase64Bytes: m.MaxImageBase64Bytes,
		WithoutEnv: c.o.Config.CredentialVars(),
	}, nil
}

// endpoint says where model m is served from, for the words of its failures: its gateway,
// the config tables its base_url and auth come from (a model's own replaces its gateway's),
// and where its credential is read, never the credential.
func endpoint(cfg *config.Config, m config.Model) sessions.Endpoint {
	ep := sessions.Endpoint{Gateway: m.Gateway, BaseURL: model.ShownURL(m.BaseURL), BaseURLOf: "model " + m.Key, AuthOf: "model " + m.Key}
	if g, ok := cfg.Gateways[m.Gateway]; ok {
		if g.BaseURL == m.BaseURL {
			ep.BaseURLOf = "gateway " + m.Gateway
		}
		if g.Auth == m.Auth {
			ep.AuthOf = "gateway " + m.Gateway
		}
	}
	switch m.Auth.Source {
	case config.AuthEnv:
		ep.AuthSource, ep.AuthName = "env", m.Auth.VarName
	case config.AuthFile:
		ep.AuthSource, ep.AuthName = "file", m.Auth.Path
	case config.AuthInline:
		ep.AuthSource = "inline"
	}
	return ep
}

// client returns model m's client, made on first use.
func (c *Catalog) client(m config.Model) (*model.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.clients[m.Key]; cl != nil {
		return cl, nil
	}
	cl, err := newClient(m, c.o.Env, c.o.Home)
	if err != nil {
		return nil, err
	}
	if observe, key := c.o.Observe, m.Key; observe != nil {
		cl.Observe = func(a model.Attempt) { observe(key, a) }
	}
	c.clients[m.Key] = cl
	return cl, nil
}

// LargestImageCap is the largest max_image_base64_bytes of cfg's catalog: the cap the hosts
// run with, while each call is held to its session's current model's
// (tools.WithImageLimit), so that a model switch needs no host restart.
func LargestImageCap(cfg *config.Config) int {
	n := 0
	for _, m := range cfg.Models {
		n = max(n, m.MaxImageBase64Bytes)
	}
	return n
}
