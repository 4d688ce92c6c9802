package cli

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"myco.dev/internal/termtext"
)

// Usage is the first part of myco --help: the ways to run myco. The flags follow it
// (see [Help]).
const Usage = `myco: a coding agent server

Usage:
  myco [--addr 127.0.0.1:8080]            serve the browser UI on loopback; prints the URL to open
  myco -p PROMPT [--model KEY] [--json]   one turn on a new durable session; the answer on stdout
  myco -p - ...                           read the prompt from standard input
  myco -p PROMPT --resume ID              continue a saved session
  myco --compact ID                       compact a saved session into a successor thread
  myco --mode cli [--resume ID]           terminal chat on a durable session (myco --help cli)
  myco --mode host                        remote host runtime (NDJSON on stdin/stdout)
  myco hosts [check|install ALIAS]        the remote hosts of ~/.ssh/config; check one, or copy myco there
  myco mcp list [--profile NAME]          the MCP servers of the config: started, their state and tools (myco --help mcp)
  myco mcp add NAME -- COMMAND [ARGS...]  add a server to the config (or --url URL); myco mcp remove NAME takes it out
  myco --version
  myco --help [TOPIC]                     this text, or a page of the manual (topics below)

`

// helpTopics maps the topics of myco --help TOPIC to pages of the manual, beyond each
// page's own name (myco --help configuration works too).
var helpTopics = map[string]string{
	"config":   "configuration.md",
	"prelude":  "workspace.md",
	"sessions": "session-format.md",
	"api":      "browser.md",
	"server":   "browser.md",
}

// Help runs myco --help [TOPIC] (args are the topics given): with none, usage, the help
// topics and then flags, the flags' descriptions; with one, the page of manual on it, the
// same bytes myco exports to each profile's manual/. It writes to stdout, for | less.
func Help(std IO, args []string, manual fs.FS, usage, flags string) int {
	switch len(args) {
	case 0:
		var b strings.Builder
		b.WriteString(usage)
		b.WriteString("Help topics (myco --help TOPIC prints the manual's page; every profile has them in manual/):\n ")
		for _, t := range topicNames(manual) {
			b.WriteString(" " + t)
		}
		b.WriteString("\n\nFlags:\n")
		b.WriteString(flags)
		fmt.Fprint(std.Stdout, b.String())
		return ExitOK
	case 1:
		page, ok := helpTopics[args[0]]
		if !ok {
			page = args[0] + ".md"
		}
		data, err := fs.ReadFile(manual, page)
		if err != nil || strings.ContainsAny(args[0], "/.") {
			fmt.Fprintf(std.Stderr, "myco: no help topic %q; the topics are: %s\n", termtext.Safe(args[0]), strings.Join(topicNames(manual), ", "))
			return ExitUsage
		}
		std.Stdout.Write(data)
		return ExitOK
	default:
		fmt.Fprintln(std.Stderr, "myco: --help takes one topic at most (see myco --help)")
		return ExitUsage
	}
}

// topicNames lists the help topics: the aliases, then the manual's pages by name.
func topicNames(manual fs.FS) []string {
	var out []string
	for t := range helpTopics {
		out = append(out, t)
	}
	pages, _ := fs.Glob(manual, "*.md")
	for _, p := range pages {
		out = append(out, strings.TrimSuffix(p, ".md"))
	}
	slices.Sort(out)
	return slices.Compact(out)
}
