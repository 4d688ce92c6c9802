package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"myco.dev/hosts/snapshot"
	"myco.dev/internal/termtext"
	"myco.dev/sessions"
)

// lastTurn returns the input entry of the last turn of session id's active thread, or -1.
func (c *chatSession) lastTurn(ctx context.Context) (sessions.TurnRef, bool) {
	sess, _, err := c.t.svc.Snapshot(ctx, c.id)
	if err != nil {
		return sessions.TurnRef{}, false
	}
	th := sess.Latest()
	for i := len(th.Entries) - 1; i >= 0; i-- {
		if e := th.Entries[i]; (e.AcceptedAt != nil || e.Continuation) && !e.Rejected {
			return sessions.TurnRef{Thread: th.ID, Turn: i}, true
		}
	}
	return sessions.TurnRef{}, false
}

// diff runs /diff: the last turn's changes (with "all", the whole session's), each file
// with its counts, then the unified diffs.
func (c *chatSession) diff(ctx context.Context, arg string) {
	out := c.t.out
	if c.id == "" {
		out.note("myco: no session yet")
		return
	}
	q := sessions.ChangesQuery{Diff: snapshot.DiffOptions{MaxPatch: 256 << 10}}
	what := "the whole session"
	if arg != "all" {
		ref, ok := c.lastTurn(ctx)
		if !ok {
			out.note("myco: no turn yet")
			return
		}
		q.Turn, what = &ref, "the last turn"
	}
	ch, err := c.t.svc.Changes(ctx, c.id, q)
	if err != nil {
		out.failed(err)
		return
	}
	w := c.t.std.Stdout
	n := 0
	for _, h := range ch.Hosts {
		if h.Err != "" {
			out.note("%s: %s", h.Host, termtext.Safe(h.Err))
			continue
		}
		files, added, deleted := sessions.ChangedFiles(h.Diff)
		n += len(files)
		for _, f := range files {
			name := f.Path
			if f.OldPath != "" {
				name = f.OldPath + " → " + f.Path
			}
			if h.Host != "local" {
				name = h.Host + ":" + name
			}
			extra := ""
			if f.NotStored {
				extra = " (too large to store)"
			}
			fmt.Fprintf(w, "%-9s %s +%d −%d%s\n", f.Status, termtext.Safe(name), f.Added, f.Deleted, extra)
		}
		if len(files) > 1 {
			fmt.Fprintf(w, "%d files, +%d −%d\n", len(files), added, deleted)
		}
		for _, f := range files {
			if f.Patch == "" {
				continue
			}
			fmt.Fprintf(w, "--- %s\n+++ %s\n%s", termtext.Safe(f.Path), termtext.Safe(f.Path), termtext.Safe(f.Patch))
			if !strings.HasSuffix(f.Patch, "\n") {
				fmt.Fprintln(w)
			}
		}
	}
	if n == 0 {
		out.note("%s changed no file", what)
	}
}

// undo runs /undo: the last turn's changes taken away ("/undo redo" puts them back; "/undo
// force" overwrites the files changed since).
func (c *chatSession) undo(ctx context.Context, arg string) {
	out := c.t.out
	if c.id == "" {
		out.note("myco: no session yet")
		return
	}
	ref, ok := c.lastTurn(ctx)
	if !ok {
		out.note("myco: no turn yet")
		return
	}
	q := sessions.RestoreRequest{Op: sessions.OpUndo, Turn: &ref}
	args := strings.Fields(arg)
	for _, a := range args {
		if a == "redo" {
			q.Op = sessions.OpRedo
		}
	}
	res, err := c.t.svc.Restore(ctx, c.id, q)
	var ce *sessions.ConflictError
	if errors.As(err, &ce) && strings.Contains(arg, "force") {
		for _, f := range ce.Files {
			q.Overwrite = append(q.Overwrite, f.Path)
		}
		res, err = c.t.svc.Restore(ctx, c.id, q)
	}
	switch {
	case errors.As(err, &ce):
		out.note("myco: nothing was put back: these files changed since the turn:")
		for _, f := range ce.Files {
			out.note("  %s", termtext.Safe(f.Path))
		}
		out.note("myco: /undo force overwrites them")
		return
	case err != nil:
		out.failed(err)
		return
	}
	verb := "undid"
	if q.Op == sessions.OpRedo {
		verb = "redid"
	}
	out.note("%s the last turn: %d file(s) put back", verb, len(res.Restored))
	for _, l := range res.LeftAlone {
		out.note("  left alone: %s (%s)", termtext.Safe(l.Path), l.Reason)
	}
}
