// Package openapitest checks HTTP answers against an OpenAPI 3.1 document, for tests: each
// answer's status must be one its operation declares, its media type one the status
// declares, its headers those marked required, and its body valid against the status's
// schema, which github.com/google/jsonschema-go validates (JSON Schema 2020-12; the
// document's schemas are its components.schemas). A [Recorder] does the checks on a
// client's transport, the events of event streams included (read with the one reader of
// server-sent events, package api's), and tells which answers of the document were never
// seen.
//
// It imports the standard library, package api (for its reader of server-sent events)
// and the validator, nothing else.
package openapitest
