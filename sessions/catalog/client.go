package catalog

import (
	"fmt"
	"net/http"
	"time"

	"myco.dev/agent/model"
	"myco.dev/agent/model/anthropic"
	"myco.dev/agent/model/completions"
	"myco.dev/agent/model/responses"
	"myco.dev/config"
)

// protocols maps config protocol names to their wire implementations.
var protocols = map[string]model.Protocol{
	config.ProtocolAnthropicMessages: anthropic.Protocol{},
	config.ProtocolOpenAIResponses:   responses.Protocol{},
	config.ProtocolOpenAICompletions: completions.Protocol{},
}

// newClient returns the client of model m, looking its credential up in env at each use.
func newClient(m config.Model, env config.Env, home string) (*model.Client, error) {
	p, ok := protocols[m.Protocol]
	if !ok {
		return nil, fmt.Errorf("model %s: unknown protocol %q", m.Key, m.Protocol)
	}
	auth := m.Auth
	return &model.Client{
		Protocol:        p,
		BaseURL:         m.BaseURL,
		Key:             func() (string, error) { return auth.Key(env.Lookup, home) },
		HTTP:            &http.Client{Transport: http.DefaultTransport},
		MaxRequestBytes: m.MaxRequestBytes,
		HeaderTimeout:   m.ResponseHeaderTimeout,
		IdleTimeout:     m.StreamIdleTimeout,
		Retry: model.RetryPolicy{
			MaxAttempts:    m.Retry.MaxAttempts,
			InitialBackoff: time.Duration(m.Retry.InitialBackoffMs) * time.Millisecond,
			MaxBackoff:     time.Duration(m.Retry.MaxBackoffMs) * time.Millisecond,
			Multiplier:     m.Retry.BackoffMultiplier,
		},
	}, nil
}
