// Package hosts is the controller side of the hosts: it routes tool calls to the machines
// they run on. The [Harness] adds an optional `host` field to the routed tools' schemas and
// sends each call to that host's worker: "local" is the in-process worker, always ready,
// which calls the tool services of myco.dev/hosts/tools directly; a [Remote] controls one
// ssh remote (`ssh … myco --mode host`), found in ~/.ssh/config ([LoadSSHConfig]), checked
// ([Remote.Check]) and installed ([Remote.Install]) from here.
//
// The remote end, `myco --mode host` and the per-user daemon behind it, is
// myco.dev/hosts/hostd; the two sides share only the protocol (myco.dev/hosts/proto) and the
// tool services, and neither imports the other.
//
// It must not import handlers, views, templ, chi, sessions, workspace or hosts/hostd.
package hosts
