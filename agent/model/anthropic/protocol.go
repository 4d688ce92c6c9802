package anthropic

import "net/http"

// Name is the protocol's config name.
const Name = "anthropic-messages"

// apiVersion is the anthropic-version header every request carries.
const apiVersion = "2023-06-01"

// Protocol is the anthropic-messages wire protocol. The zero value is ready to use and it
// is safe for concurrent use.
type Protocol struct{}

// Name returns "anthropic-messages".
func (Protocol) Name() string { return Name }

// Path returns "/v1/messages".
func (Protocol) Path() string { return "/v1/messages" }

// Header sets anthropic-version and, when key is not empty, x-api-key.
func (Protocol) Header(h http.Header, key string) {
	h.Set("anthropic-version", apiVersion)
	if key != "" {
		h.Set("x-api-key", key)
	}
}
