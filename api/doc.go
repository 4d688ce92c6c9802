// Package api is the wire contract of myco's JSON API, one profile's, under
// /profiles/NAME/api/: every request and answer, the actions and their names, the events
// of the event stream and their types, the error envelope and its codes, the API's version,
// and the reader of server-sent events that every client of the stream uses ([SSEReader]).
// The server (package handlers) answers with these types, the Go client (package client)
// sends and reads them, and the OpenAPI document (docs/openapi.json, served at
// /api/openapi.json) is generated from them, their comments and their tags: after a change
// here, run go test ./handlers -run TestOpenAPIDocument -update.
//
// The field names and json tags are what clients send and read. A request with a field
// its struct does not have is refused, and so is one without a field tagged
// required:"true". Lists in answers are never null: an empty one is []. An optional field
// (omitempty) is left out when it does not apply; each says when it is there. An enum tag
// lists the values a field takes.
//
// It imports the standard library only, nothing of myco: a program that uses the API
// links this package and the client, not the server.
package api
