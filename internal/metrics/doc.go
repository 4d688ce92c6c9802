// Package metrics keeps counters, gauges and histograms, with labels, and writes them in
// the Prometheus text exposition format, version 0.0.4 (# HELP and # TYPE lines, counters
// named *_total, histograms as *_bucket{le=...}, *_sum and *_count, label values escaped).
// [Merge] joins the expositions of several registries (a server's workers' and its own)
// into one, each family once.
//
// It is ours rather than prometheus/client_golang, whose package initialisation registers
// the Go runtime's and the process's collectors and links protobuf, at every start of every
// mode of myco (see docs/dev/decisions.md). Its tests check what it writes with the
// Prometheus parser (prometheus/common/expfmt), which only the tests link.
//
// Recording is cheap: an atomic add, and for a labelled family a map lookup under a read
// lock, with no allocation. Everything here is safe for concurrent use. It imports only the
// standard library and has no package-level state.
package metrics
