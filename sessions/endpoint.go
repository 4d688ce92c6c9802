package sessions

import (
	"context"
	"iter"

	"myco.dev/agent"
	"myco.dev/agent/model"
)

// Endpoint is where a model is served from, as what a person is told of a failed request
// to it names it ([Describe]): the gateway to look at and the config keys to check. It
// never holds a credential, only where one comes from. The zero Endpoint names nothing, and
// the words fall back to "the model endpoint".
type Endpoint struct {
	// Gateway is the gateway's name; "" for a model configured with its own base_url.
	Gateway string
	// BaseURL is the base_url without userinfo or query ([model.ShownURL]), and BaseURLOf
	// the config table that sets it: "gateway NAME" or "model KEY".
	BaseURL, BaseURLOf string
	// AuthOf is the config table whose auth the model uses ("gateway NAME" or "model KEY"),
	// AuthSource where the credential comes from ("env", "file", "inline", or "" for none),
	// and AuthName the environment variable or the file.
	AuthOf, AuthSource, AuthName string
}

// endpointModel is the model of a session's runs: its failures carry where it is served
// from, for [Describe].
type endpointModel struct {
	agent.Model
	at endpointAt
}

// endpointAt is where a request went: the endpoint, the catalog key and the model id sent.
type endpointAt struct {
	Endpoint
	model, apiModel string
}

func (m endpointModel) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		for ch, err := range m.Model.Stream(ctx, req) {
			if err != nil && ctx.Err() == nil {
				err = &endpointError{at: m.at, err: err}
			}
			if !yield(ch, err) {
				return
			}
		}
	}
}

// Warm opens the model's connection ahead of a request when the model can
// ([model.Warmer]).
func (m endpointModel) Warm(ctx context.Context) {
	if w, ok := m.Model.(model.Warmer); ok {
		w.Warm(ctx)
	}
}

// endpointError is a failed request to a model, with where it went. Its message is the
// failure's own: the chain that is logged is as it was.
type endpointError struct {
	at  endpointAt
	err error
}

func (e *endpointError) Error() string { return e.err.Error() }
func (e *endpointError) Unwrap() error { return e.err }

// withEndpoint returns cfg whose model's failures name where it is served from.
func withEndpoint(cfg AgentConfig) AgentConfig {
	if cfg.Options.Model != nil {
		cfg.Options.Model = endpointModel{Model: cfg.Options.Model,
			at: endpointAt{Endpoint: cfg.Endpoint, model: cfg.ModelKey, apiModel: cfg.Options.APIModel}}
	}
	return cfg
}
