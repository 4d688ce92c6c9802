// Package hosts routes tool calls to the machines they run on. The [Harness] adds an
// optional `host` field to the routed tools' schemas and sends each call to that host's
// worker: "local" is always in-process and always ready.
//
// It must not import handlers, views, templ or chi.
package hosts
