package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"myco.dev/hosts"
	"myco.dev/internal/shquote"
	"myco.dev/internal/termtext"
)

// ProjectServers tells what the project file of a directory offers and the states of the
// servers started for it; *hosts.Harness satisfies it.
type ProjectServers interface {
	Project(dir string) hosts.ProjectStatus
	DiscoverProject(ctx context.Context, dir string)
}

// ProjectLabel is how the terminal and the pages name a project's server: project:NAME.
func ProjectLabel(name string) string { return "project:" + name }

// printProject writes what dir's project file offers, for `myco mcp list` run there: the
// file and whether it is approved, then each server, with its state once started. It
// reports whether an approved server failed.
func printProject(w io.Writer, st hosts.ProjectStatus) (failed bool) {
	if !st.Offers() {
		return false
	}
	line := func(s string) { fmt.Fprintln(w, termtext.Safe(s)) }
	approve := "myco mcp approve " + shquote.Quote(st.Dir)
	switch {
	case st.Problem != "":
		line(fmt.Sprintf("project: %s cannot be used: %s", st.File, st.Problem))
		return false
	case st.Approved:
		line(fmt.Sprintf("project: %s, approved: its servers start for the sessions in this directory", st.File))
	case st.Changed:
		line(fmt.Sprintf("project: %s changed since you approved it: myco starts none of its servers until you approve it again (%s)", st.File, approve))
	default:
		line(fmt.Sprintf("project: %s offers %d MCP %s; myco starts none of them until you approve them (%s)",
			st.File, len(st.Servers), plural(len(st.Servers), "server", "servers"), approve))
	}
	for _, s := range st.Servers {
		i := slices.IndexFunc(st.States, func(m hosts.MCPStatus) bool { return m.Server == s.Server })
		if st.Approved && s.Problem == "" && i >= 0 {
			ms := st.States[i]
			failed = failed || ms.State == hosts.MCPFailed
			ms.Server = ProjectLabel(s.Name)
			printMCPServer(w, ms)
			continue
		}
		printOffered(w, s)
	}
	return failed
}

// printOffered writes one server of a project's file as the file writes it: the exact
// command or URL, its env and headers with their ${VAR}s, the variables of your
// environment it reads, or why myco does not start it.
func printOffered(w io.Writer, s hosts.ProjectServer) {
	line := func(s string) { fmt.Fprintln(w, termtext.Safe(s)) }
	if s.Problem != "" {
		line(fmt.Sprintf("%s: not started: %s", ProjectLabel(s.Name), s.Problem))
		return
	}
	if s.URL != "" {
		line(fmt.Sprintf("%s: http %s", ProjectLabel(s.Name), s.URL))
	} else {
		line(fmt.Sprintf("%s: stdio %s", ProjectLabel(s.Name), commandLine(s.Command, s.Args)))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		line(fmt.Sprintf("  env %s=%s", k, s.Env[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		line(fmt.Sprintf("  header %s: %s", k, s.Headers[k]))
	}
	if len(s.Vars) > 0 {
		line("  reads from your environment: " + strings.Join(s.Vars, ", "))
	}
}

// commandLine writes a command and its arguments as a shell would take them.
func commandLine(command string, args []string) string {
	q := []string{shquote.Quote(command)}
	for _, a := range args {
		q = append(q, shquote.Quote(a))
	}
	return strings.Join(q, " ")
}

// MCPApprove runs `myco mcp approve [DIR]` on offer, what the directory's project file
// offers now: it shows the servers as [printProject] does, then approves exactly that
// content (approve is given its digest) when yes (--yes) or when the person answers y at a
// terminal. Not at a terminal and without --yes, nothing is approved.
func MCPApprove(std IO, offer hosts.ProjectOffer, yes bool, approve func(sum string) (hosts.ProjectOffer, error)) int {
	switch {
	case !offer.Offers():
		fmt.Fprintln(std.Stderr, termtext.Safe(fmt.Sprintf("myco: %s has no .mcp.json: there is nothing to approve", offer.Dir)))
		return ExitError
	case offer.Problem != "":
		fmt.Fprintln(std.Stderr, termtext.Safe(fmt.Sprintf("myco: %s cannot be used: %s", offer.File, offer.Problem)))
		return ExitError
	}
	fmt.Fprintln(std.Stdout, termtext.Safe(fmt.Sprintf("%s offers these MCP servers, which would run with your rights for the sessions in %s:", offer.File, offer.Dir)))
	for _, s := range offer.Servers {
		printOffered(std.Stdout, s)
	}
	if !yes {
		if !isTerminal(std.Stdin) {
			fmt.Fprintln(std.Stderr, "myco: not approved: answer at a terminal, or run myco mcp approve --yes to approve what is shown above")
			return ExitUsage
		}
		fmt.Fprint(std.Stdout, "Approve them? [y/N] ")
		answer, _ := bufio.NewReader(std.Stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(std.Stdout, "Not approved.")
			return ExitError
		}
	}
	approved, err := approve(offer.Sum)
	if err != nil {
		return Fail(std.Stderr, err)
	}
	var names []string
	for _, s := range approved.Servers {
		if s.Problem == "" {
			names = append(names, ProjectLabel(s.Name))
		}
	}
	fmt.Fprintln(std.Stdout, termtext.Safe(fmt.Sprintf("Approved %s (sha256 %s): %s start for the sessions in %s, a running myco's included; a change to the file needs approving again.",
		approved.File, approved.Sum, strings.Join(names, ", "), approved.Dir)))
	return ExitOK
}

// projectNote is what the chat says when it starts in a directory whose project file
// offers MCP servers that are not approved: the file, each server as the file writes it,
// and how to approve them. nil when there is nothing to say.
func projectNote(st hosts.ProjectStatus) []string {
	if !st.Offers() || st.Approved {
		return nil
	}
	var head string
	switch {
	case st.Problem != "":
		return []string{fmt.Sprintf("myco: %s cannot be used: %s", st.File, st.Problem)}
	case st.Changed:
		head = fmt.Sprintf("myco: %s changed since you approved it, so myco starts none of its MCP servers until you approve it again:", st.File)
	default:
		head = fmt.Sprintf("myco: %s offers MCP servers; myco starts none of them until you approve them:", st.File)
	}
	var b strings.Builder
	for _, s := range st.Servers {
		printOffered(&b, s)
	}
	out := []string{head}
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		out = append(out, "  "+l)
	}
	return append(out, "  to approve them, run in a terminal: myco mcp approve "+shquote.Quote(st.Dir)+" (or use the session's page); sessions then get their tools")
}

// projectStatusLine is the chat's /status line of the project's servers, or "" when the
// directory offers none.
func projectStatusLine(st hosts.ProjectStatus) string {
	switch {
	case !st.Offers():
		return ""
	case st.Problem != "":
		return "project mcp: " + st.File + " cannot be used"
	case st.Changed:
		return "project mcp: " + st.File + " changed since approved: none started"
	case !st.Approved:
		return "project mcp: " + st.File + " not approved: none started (myco mcp approve)"
	}
	var parts []string
	for _, s := range st.Servers {
		p := ProjectLabel(s.Name)
		i := slices.IndexFunc(st.States, func(m hosts.MCPStatus) bool { return m.Server == s.Server })
		switch {
		case s.Problem != "":
			p += " not started"
		case i < 0 || st.States[i].State == hosts.MCPPending:
			p += " approved"
		case st.States[i].State == hosts.MCPListed:
			p += fmt.Sprintf(" listed (%d %s)", len(st.States[i].Tools), plural(len(st.States[i].Tools), "tool", "tools"))
		default:
			p += fmt.Sprintf(" failed (%s)", summarize(st.States[i].Err, 80))
		}
		parts = append(parts, p)
	}
	return "project mcp: " + strings.Join(parts, " · ")
}
