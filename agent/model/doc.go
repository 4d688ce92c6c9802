// Package model holds the provider-neutral conversation types (messages, parts, tool
// specifications, usage), the streaming chunk events every wire protocol is translated into,
// and the HTTP client that sends one serialized request body, checks it against the request
// size cap and retries only failures that happened before any of the response streamed.
//
// The wire protocols live in the subpackages anthropic, responses and completions; each one
// implements [Protocol]. This package imports only the standard library.
package model
