package responses

import (
	"iter"
	"net/http"

	"myco.dev/agent/model"
)

// name is the protocol's config name; thinking parts carrying it are replayed as reasoning
// items, all others are dropped.
const name = "openai-responses"

// Protocol is the openai-responses wire format. The zero value is ready to use and safe
// for concurrent use.
type Protocol struct{}

var _ model.Protocol = Protocol{}

// Name returns "openai-responses".
func (Protocol) Name() string { return name }

// Path returns "/responses"; the gateway's base_url carries any version prefix such as /v1.
func (Protocol) Path() string { return "/responses" }

// Header sets bearer auth when key is not empty.
func (Protocol) Header(h http.Header, key string) {
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
}

// Encode serializes req as a streaming, stateless responses request.
func (Protocol) Encode(req model.Request) ([]byte, error) { return encode(req) }

// Decode reads a responses event stream, yields its chunks and ends with one [model.Done].
func (Protocol) Decode(events iter.Seq2[model.Event, error], yield func(model.Chunk) bool) error {
	return decode(events, yield)
}
