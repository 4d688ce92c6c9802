package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"myco.dev/internal/termtext"
	"myco.dev/policy"
	"myco.dev/sessions"
)

// maxListed is how many sessions /sessions shows; a filter finds the others.
const maxListed = 30

// command runs one slash command and reports whether the chat should end.
func (c *chatSession) command(ctx context.Context, cmd string) (quit bool) {
	t := c.t
	out := t.out
	name, arg, _ := strings.Cut(cmd, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "quit", "exit":
		return true
	case "help":
		fmt.Fprint(t.std.Stderr, chatHelp)
	case "model":
		c.modelCmd(ctx, arg)
	case "status":
		c.status(ctx)
	case "mode":
		c.modeCmd(ctx, arg)
	case "compact":
		if c.id == "" {
			out.note("myco: nothing to compact yet")
			return false
		}
		// The session's updates report the new thread.
		_, err := t.run(ctx, c.id, func() (*sessions.Job, error) { return t.svc.Compact(ctx, c.id) })
		switch {
		case errors.Is(err, sessions.ErrStopped):
			out.interrupted()
		case err != nil:
			out.turnFailed(err)
		}
	case "new":
		c.close()
		out.note("a new session starts with your next message")
	case "resume":
		if arg == "" {
			out.note("myco: /resume needs a session id (see /sessions)")
			return false
		}
		if err := c.open(ctx, arg, ""); err != nil {
			out.failed(err)
		}
	case "sessions":
		c.list(ctx, arg)
	case "archive", "restore":
		c.archive(ctx, arg, name == "archive")
	case "diff":
		c.diff(ctx, arg)
	case "undo":
		c.undo(ctx, arg)
	default:
		out.note("myco: unknown command /%s (see /help)", termtext.Safe(name))
	}
	return false
}

// list runs /sessions: this profile's sessions whose title or id contains filter, newest
// first, archived ones marked.
func (c *chatSession) list(ctx context.Context, filter string) {
	out := c.t.out
	list, err := c.t.svc.List(ctx, sessions.ListOptions{All: true, Query: filter})
	if err != nil {
		out.failed(err)
		return
	}
	for i, s := range list {
		if i == maxListed {
			out.note("… and %d more (/sessions TEXT filters by title or id)", len(list)-maxListed)
			break
		}
		line := s.ID + "  " + s.Title
		if s.Archived {
			line += " [archived]"
		}
		if s.ID == c.id {
			line += " (this one)"
		}
		out.note("%s", line)
	}
	switch {
	case len(list) == 0 && filter != "":
		out.note("no session matches %q", filter)
	case len(list) == 0:
		out.note("no sessions yet")
	}
}

// archive runs /archive and /restore on session id, the current one when id is empty.
// Archiving changes browsing only: the session stays usable, here too.
func (c *chatSession) archive(ctx context.Context, id string, archived bool) {
	out := c.t.out
	verb := map[bool]string{true: "archive", false: "restore"}[archived]
	if id == "" {
		id = c.id
	}
	if id == "" {
		out.note("myco: no session yet; /%s ID %ss a saved one (see /sessions)", verb, verb)
		return
	}
	if id != c.id {
		defer c.t.svc.CloseSession(id) // the runtime the write opened; it has no tools
	}
	if err := c.t.svc.SetArchived(ctx, id, archived); err != nil {
		out.failed(err)
		return
	}
	switch {
	case archived && id == c.id:
		out.note("archived %s: hidden from browsing, still usable (/restore undoes it)", id)
	case archived:
		out.note("archived %s: hidden from browsing, still usable (/restore %s undoes it)", id, id)
	default:
		out.note("restored %s", id)
	}
}

// modeCmd shows the session's approval mode, or changes it (/mode ask).
func (c *chatSession) modeCmd(ctx context.Context, arg string) {
	out := c.t.out
	if c.id == "" {
		out.note("myco: the mode applies to a session: send a message first")
		return
	}
	if arg != "" {
		if err := c.t.svc.SetMode(ctx, c.id, policy.Mode(arg)); err != nil {
			out.failed(err)
			return
		}
	}
	sess, _, err := c.t.svc.Snapshot(ctx, c.id)
	if err != nil {
		out.failed(err)
		return
	}
	out.note("mode %s (%s)", c.t.svc.Mode(sess).Describe(), c.t.svc.Guard().SandboxSupport())
}
