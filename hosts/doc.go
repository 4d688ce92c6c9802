// Package hosts routes tool calls to the machines they run on. The [Harness] adds an
// optional `host` field to the routed tools' schemas and sends each call to that host's
// worker: "local" is always in-process and always ready; a [Remote] controls one ssh
// remote. The remote side lives here too: [Proxy] is `myco --mode host`, a thin proxy to
// the per-user [Daemon] that owns the tools and keeps their state across ssh drops.
//
// It must not import handlers, views, templ or chi.
package hosts
