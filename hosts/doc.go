// Package hosts is the controller side of the hosts: it routes tool calls to the machines
// they run on. The [Harness] adds an optional `host` field to the routed tools' schemas and
// sends each call to that host's worker: "local" is the in-process worker, always ready,
// which calls the tool services of myco.dev/hosts/tools directly; a [Remote] controls one
// ssh remote (`ssh … myco --mode host`), found in ~/.ssh/config ([LoadSSHConfig]), checked
// ([Remote.Check]) and installed ([Remote.Install]) from here.
//
// The harness also offers the tools of MCP servers (myco.dev/hosts/mcp), named
// mcp__SERVER__TOOL and without the host field: a server runs where its configuration
// says, on the local worker (a myco.dev/hosts/mcp Set) or on a remote, whose host daemon runs it
// ([RemoteMCP], frames of protocol 5). [Harness.Discover] lists their tools before a
// session's first model request; [Harness.MCPStatuses] tells their states.
//
// The remote end, `myco --mode host` and the per-user daemon behind it, is
// myco.dev/hosts/hostd; the two sides share only the protocol (myco.dev/hosts/proto) and the
// tool services, and neither imports the other.
//
// It must not import handlers, views, templ, chi, sessions, workspace or hosts/hostd.
package hosts
