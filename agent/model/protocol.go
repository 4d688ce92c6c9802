package model

import (
	"io"
	"net/http"
)

// Protocol is one wire format. It builds the exact request body and translates a
// successful response stream into chunks. It performs no I/O of its own: [Client] sends the
// body it encodes and hands it the response body.
type Protocol interface {
	// Name is the protocol's config name, e.g. "anthropic-messages".
	Name() string
	// Path is appended to the gateway's base_url, e.g. "/v1/messages".
	Path() string
	// Header sets the protocol's headers on h, including auth when key is not empty.
	Header(h http.Header, key string)
	// Encode serializes req as the request body.
	Encode(req Request) ([]byte, error)
	// Decode reads the response stream, yields its chunks and ends with exactly one [Done]
	// on success. A failure reported inside the stream, or a stream that ends early, is
	// returned as an error (a *ProviderError with MidStream set for the former).
	Decode(r io.Reader, yield func(Chunk) bool) error
}
