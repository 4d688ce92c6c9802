package model

import (
	"iter"
	"net/http"
)

// Protocol is one wire format. It builds the exact request body and translates the events
// of a successful response stream into chunks. It performs no I/O of its own: [Client]
// sends the body it encodes, reads the response under its bounds and timeouts, and hands it
// the response's server-sent events.
type Protocol interface {
	// Name is the protocol's config name, e.g. "anthropic-messages".
	Name() string
	// Path is joined to the gateway's base_url, e.g. "/v1/messages".
	Path() string
	// Header sets the protocol's headers on h, including auth when key is not empty.
	Header(h http.Header, key string)
	// Encode serializes req as the request body.
	Encode(req Request) ([]byte, error)
	// Decode reads the response's events, yields its chunks and ends with exactly one
	// [Done] on success. A failure reported inside the stream, or a stream that ends early,
	// is returned as an error (a *ProviderError with MidStream set for the former). An
	// event that cannot be decoded is an *[EventError], never skipped; only events of a
	// type the protocol does not know, and keep-alives ([KeepAlive]), are ignored.
	Decode(events iter.Seq2[Event, error], yield func(Chunk) bool) error
}
