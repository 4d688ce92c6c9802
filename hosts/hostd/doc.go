// Package hostd is the remote end of the hosts: what runs on a machine that a controller
// (myco.dev/hosts) reaches over ssh. [RunHost] is `myco --mode host`: a thin [Proxy]
// between ssh's stdin and stdout and the per-user [Daemon], which it starts when none
// answers ([RunDaemon], `myco --mode host-daemon`). The daemon owns the tool services
// (bash, the editor, view_image), the MCP servers controllers configure to run on the host
// (one myco.dev/hosts/mcp Set per configuration, their instances per owner) and every
// owner's resources, and keeps them across ssh drops for a grace period. When no daemon can be had, the host serves the connection in
// its own process ([Daemon.Serve] with the settings given), and every process ends with
// the connection. The caller (cmd/myco) parses the flags, reads the environment and
// handles the signals; this package reads no environment variable.
//
// It speaks myco.dev/hosts/proto and runs the tools of myco.dev/hosts/tools. It must not
// import the controller (myco.dev/hosts), sessions, the agent (beyond agent/model, which
// the tools' results use), handlers, views, templ or chi.
package hostd
