// Package mcp makes the tools of MCP servers (the Model Context Protocol) host tools: a
// [Set] connects to the configured servers with github.com/modelcontextprotocol/go-sdk,
// stdio servers through the SDK's command transport and HTTP servers through its
// streamable client transport, lists their tools, and exposes each one as a [Tool] with
// the interface of myco.dev/hosts/tools.Tool, named mcp__SERVER__TOOL.
//
// # Lifetimes
//
// A Set belongs to one host worker: the local worker in-process, or the host daemon for
// servers that run on a remote host. What its servers are is decided once per Set:
//
//   - The tool list is the Set's, shared by every session of the profile. [Set.Discover]
//     starts the servers that are not listed yet, in parallel, each bounded by its startup
//     timeout, and lists their tools; the list then stays as it is for the life of the Set,
//     so that the tools, their order and their descriptions are the same in every session
//     (the system prompt stays byte-identical, for the providers' prompt caches).
//   - Server processes and HTTP sessions belong to an owner, the session runtime that
//     calls, like bash sessions: an owner's first call to a server starts the owner's own
//     instance of it, its later calls reuse it, and [Set.Release] ends it. A runtime lives
//     across compaction and agent replacement, and so do its servers. Two sessions never
//     share an instance, so the state a server keeps per client (a browser page, an open
//     transaction, a working directory, an HTTP server's MCP session) is never seen by
//     another session, and a server one session crashed does not fail the other's calls.
//   - The instance Discover started to list the tools is kept, and the first owner to
//     call that server takes it over, so that the first session does not wait for a
//     second start. A session that never calls a server starts nothing.
//
// # Failures
//
// Nothing a server does stops myco or the turn. A server that does not start, or whose
// process ends, answers its tools' calls with an error result that names the server and
// the reason (its exit status and the end of its stderr), and is started again on the
// next call after a backoff (1 s, doubling to 1 min, per owner and server; a call the
// server answers resets it). A call in flight when the server died has an unknown outcome
// ([tools.Result.Unknown]). A call that outlives its tool timeout is cancelled on the
// server (the SDK sends notifications/cancelled) and answers an error that says so.
//
// # Safety
//
// A stdio server gets PATH, HOME and LANG and the variables its configuration names,
// nothing else of myco's environment; it runs in its own process group, which is killed
// when it ends, and which a reaper, when given, kills if myco dies. The client offers the
// server no capabilities (no roots, sampling or elicitation). An HTTP server is reached
// over https, or plain http on loopback unless allowed, and its redirects are refused.
// Results are untrusted tool output: text is capped (256 KiB by default, truncated with a
// note), images pass the checks of view_image (format by magic number, size cap) and
// the current model's image limit.
//
// It imports only the standard library, the SDK, agent/model and hosts/tools; it must not
// import sessions, handlers, views or the agent.
package mcp
