// Package engine starts one profile: its config loaded and checked, its workspace
// prepared, and its session service ([sessions.Manager]) built on a host harness that
// every session shares (the local tools in process, the local MCP servers, the lazy ssh
// remotes of ~/.ssh/config), with the model catalog and the system prompt of
// sessions/catalog wired in. A profile worker, myco -p and the chat each start one; myco
// mcp list starts only its hosts.
//
// It is below every front end: it must not import handlers, views, cli, profiles or
// hosts/hostd. Like every package below cmd/myco it reads no environment variable: the
// caller passes what the process has ([OpenOptions]).
package engine
