package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"myco.dev/hosts"
	"myco.dev/internal/termtext"
)

// MCPServers tells the configured MCP servers' states, for `myco mcp list`, the chat's
// /status and the tool lines; *hosts.Harness satisfies it.
type MCPServers interface {
	MCPStatuses() []hosts.MCPStatus
}

// MCPLister is [MCPServers] that can list the servers' tools first, starting them, and
// tell a directory's project servers; *hosts.Harness satisfies it.
type MCPLister interface {
	MCPServers
	ProjectServers
	Discover(ctx context.Context)
}

// MCPUsage is the usage of `myco mcp`; each command also takes --profile NAME and
// --config PATH.
const MCPUsage = `usage: myco mcp list [--profile NAME] [--config PATH]
       myco mcp add NAME [--host H] [--env K=V]... [--env K]... [--cwd DIR] -- COMMAND [ARGS...]
       myco mcp add NAME --url URL [--header K=V]...
       myco mcp remove NAME
       myco mcp approve [--yes] [DIR]
       myco mcp revoke [DIR]`

// MCPEditApplied says when a change that `myco mcp add` or `remove` made to config.toml
// takes effect.
const MCPEditApplied = "A running myco applies it once no turn runs and no session keeps a process running (a bash session or an MCP server); sessions started then have it. myco mcp list starts the servers now."

// MCPList runs `myco mcp list`: it starts every enabled server whose tools are not
// listed, as a session's start does, and prints each configured server, its state and
// its tools; then what the project file of dir (the working directory) offers, and the
// states of the servers it offers once approved. The exit status is 1 when a server's
// tools could not be listed.
func MCPList(ctx context.Context, std IO, servers MCPLister, dir string) int {
	servers.Discover(ctx)
	var proj hosts.ProjectStatus
	if dir != "" {
		servers.DiscoverProject(ctx, dir)
		proj = servers.Project(dir)
	}
	sts := servers.MCPStatuses()
	if len(sts) == 0 && !proj.Offers() {
		fmt.Fprintln(std.Stdout, "no MCP servers are configured: add [mcp_servers.NAME] tables to config.toml, or run myco mcp add (myco --help mcp)")
		return ExitOK
	}
	code := ExitOK
	for _, st := range sts {
		if st.State == hosts.MCPFailed {
			code = ExitError
		}
		printMCPServer(std.Stdout, st)
	}
	if printProject(std.Stdout, proj) {
		code = ExitError
	}
	return code
}

// printMCPServer writes one server of `myco mcp list`: a line with its name, where it
// runs and its state, then one line per tool, with the server's name of a tool whose
// exposed name had to differ.
func printMCPServer(w io.Writer, st hosts.MCPStatus) {
	var line string
	switch st.State {
	case hosts.MCPDisabled:
		line = st.Server + ": disabled (enabled = false)"
	case hosts.MCPListed:
		line = fmt.Sprintf("%s: started, %s, %d %s", st.Server, where(st), len(st.Tools), plural(len(st.Tools), "tool", "tools"))
	case hosts.MCPFailed:
		line = fmt.Sprintf("%s: failed, %s: %s", st.Server, where(st), oneLine(st.Err))
		if !st.RetryAt.IsZero() {
			line += fmt.Sprintf(" (myco tries again after %s)", st.RetryAt.Format(time.TimeOnly))
		}
	default:
		line = fmt.Sprintf("%s: %s, %s", st.Server, st.State, where(st))
	}
	fmt.Fprintln(w, termtext.Safe(line))
	for _, t := range st.Tools {
		if t.Mapped {
			fmt.Fprintln(w, termtext.Safe(fmt.Sprintf("  %s  (the server's %q)", t.Name, t.Remote)))
		} else {
			fmt.Fprintln(w, termtext.Safe("  "+t.Name))
		}
	}
}

// where says how a server is reached: "stdio on local", "stdio on host devbox", "http".
func where(st hosts.MCPStatus) string {
	switch {
	case st.Transport == "http":
		return "http"
	case st.Host == hosts.Local:
		return "stdio on local"
	}
	return "stdio on host " + st.Host
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// mcpStatusLine is the chat's /status line of the MCP servers, or "" when none is
// configured: each server, where it runs unless local, and its state.
func mcpStatusLine(servers MCPServers) string {
	if servers == nil {
		return ""
	}
	var parts []string
	for _, st := range servers.MCPStatuses() {
		s := st.Server
		if st.Host != "" && st.Host != hosts.Local {
			s += " @" + st.Host
		}
		switch st.State {
		case hosts.MCPListed:
			s += fmt.Sprintf(" listed (%d %s", len(st.Tools), plural(len(st.Tools), "tool", "tools"))
			if st.Running > 0 {
				s += fmt.Sprintf(", %d running", st.Running)
			}
			s += ")"
		case hosts.MCPFailed:
			s += fmt.Sprintf(" failed (%s)", summarize(st.Err, 80))
		default:
			s += " " + string(st.State)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	return "mcp: " + strings.Join(parts, " · ")
}

// mcpCall names an MCP tool call for the tool lines: "mcp SERVER/TOOL", with the server's
// own name of the tool, and the host the server runs on. ok is false for a name that is
// not an MCP tool's.
func mcpCall(servers MCPServers, name string) (label, host string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	if servers != nil {
		best := hosts.MCPStatus{}
		for _, st := range servers.MCPStatuses() {
			if strings.HasPrefix(rest, st.Server+"__") && len(st.Server) > len(best.Server) {
				best = st
			}
		}
		if best.Server != "" {
			tool := strings.TrimPrefix(rest, best.Server+"__")
			for _, t := range best.Tools {
				if t.Name == name {
					tool = t.Remote
				}
			}
			return "mcp " + best.Server + "/" + tool, best.Host, true
		}
	}
	server, tool, found := strings.Cut(rest, "__")
	if !found {
		return "", "", false
	}
	return "mcp " + server + "/" + tool, "", true
}
