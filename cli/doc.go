// Package cli is myco's terminal front ends: the one-shot prompt (myco -p, its answer as
// text or, with --json, every update as NDJSON), myco --compact, the scrolling chat (myco
// --mode cli) and the remote hosts' commands (myco hosts, hosts check, hosts install). Each
// entry point takes the profile's session service (or, for the hosts, what ~/.ssh/config
// lists) and the process's standard streams, and returns the exit status; it calls the
// service as the HTTP handlers do and knows nothing of the command line that started it.
//
// Everything it writes to a terminal passes through [termtext.Safe]. It must not import
// handlers, views, templ, chi or profiles.
package cli
