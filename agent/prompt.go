package agent

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"myco.dev/agent/model"
)

// PromptOptions are the facts [SystemPrompt] describes.
type PromptOptions struct {
	Tools         []model.ToolSpec
	Hosts         []string // known host names, "local" first; empty means local only
	ContextWindow int      // tokens; 0 leaves it out
	AutoCompactAt float64  // fraction of ContextWindow; 0 means auto-compaction is off
	// Blocks are further sections (guidance, prelude, workspace listing), appended in order.
	// Empty blocks are skipped.
	Blocks []string
}

// toolBlurbs are one-line summaries of the host tools; the tool specs carry the details.
var toolBlurbs = map[string]string{
	"bash":                        "run shell commands, or start long-lived shell sessions and write to them",
	"str_replace_based_edit_tool": "view files and directories, create files, and edit them by exact string replacement",
	"view_image":                  "look at a png, jpeg, gif or webp image file",
}

// SystemPrompt returns the system prompt for o. The same options always give the same bytes,
// because prompt caching depends on an unchanged prefix.
func SystemPrompt(o PromptOptions) string {
	var b strings.Builder
	b.WriteString("You are myco, a coding agent. You carry out tasks from a user or from another agent by working with tools on the local machine and on remote hosts reached over SSH. Work step by step, check what your commands did, and say plainly what you changed and what is left.\n")

	if len(o.Tools) > 0 {
		b.WriteString("\n# Tools\n\n")
		for _, t := range o.Tools {
			if blurb, ok := toolBlurbs[t.Name]; ok {
				fmt.Fprintf(&b, "- %s: %s.\n", t.Name, blurb)
			} else {
				fmt.Fprintf(&b, "- %s\n", t.Name)
			}
		}
		b.WriteString("\nTool calls in one response run at the same time; put calls that depend on each other in separate responses.\n")
	}

	b.WriteString("\n# Hosts\n\n")
	hosts := o.Hosts
	if len(hosts) == 0 {
		hosts = []string{"local"}
	}
	fmt.Fprintf(&b, "Known hosts: %s.\n", strings.Join(hosts, ", "))
	b.WriteString("The host tools (bash, str_replace_based_edit_tool, view_image) take an optional `host` field naming where they run. Omit it to run on local, this machine. Remote hosts connect over SSH on first use; a connection failure shows up in the tool's output.\n")
	b.WriteString("Bash session ids are per host: a session started on one host does not exist on another.\n")
	b.WriteString("There is no working-directory field. On local, commands start in this session's directory (the # Session block of the runtime notes names it), where relative paths of view_image and of the user's @path attachments resolve too; on a remote host they start in the host process's working directory. Use `cd DIR && cmd` to run elsewhere; the directory change lasts only for that call.\n")

	b.WriteString("\n# This session\n\n")
	b.WriteString("The runtime notes in the conversation ([myco: runtime]) carry a # Session block with this session's id; the newest one holds. Use that id as parent_session when you start child sessions through myco's API. They also list the tool handles you hold (bash sessions, files you have read), on every host.\n")
	b.WriteString("You cannot run myco's slash commands (/compact, /model, /new, /resume and the others): they are the user's. When one would help, tell the user which to run.\n")

	if o.ContextWindow > 0 {
		b.WriteString("\n# Context\n\n")
		fmt.Fprintf(&b, "Your context window is %s tokens.", thousands(o.ContextWindow))
		if o.AutoCompactAt > 0 {
			at := int(math.Round(float64(o.ContextWindow) * o.AutoCompactAt))
			pct := strconv.FormatFloat(math.Round(o.AutoCompactAt*1000)/10, 'f', -1, 64)
			fmt.Fprintf(&b, " When the prompt reaches %s tokens (%s%% of the window), the conversation is compacted automatically at the next pause between tool rounds: a summary and recent context replace the older messages, and you continue from there. Keep important facts in your messages rather than only in tool output.", thousands(at), pct)
		}
		b.WriteString("\n")
	}

	for _, blk := range o.Blocks {
		if strings.TrimSpace(blk) == "" {
			continue
		}
		b.WriteString("\n")
		b.WriteString(strings.TrimRight(blk, "\n"))
		b.WriteString("\n")
	}
	return b.String()
}

// thousands formats n with comma separators: 1000000 → "1,000,000".
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
