// Package anthropic implements the anthropic-messages wire protocol (POST /v1/messages with
// "stream": true) as a [model.Protocol]: it encodes a neutral [model.Request] as the exact
// request body and decodes the server-sent event stream into [model.Chunk] values.
//
// It performs no I/O of its own and imports only the standard library and agent/model.
package anthropic
