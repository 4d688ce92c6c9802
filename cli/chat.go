package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"myco.dev/agent/model"
	"myco.dev/internal/lineedit"
	"myco.dev/internal/termtext"
	"myco.dev/sessions"
)

const chatHelp = `myco --mode cli: a scrolling terminal chat on a durable session

Usage:
  myco --mode cli [--model KEY] [--profile NAME]   chat on a new session
  myco --mode cli --resume ID [--model KEY]        continue a saved session

Type a message and press Enter. The answer streams to stdout; thinking (folded to one
line), tool calls (with their host, their output as it comes, at most 10 lines at a time,
and how each ended: exit 1, stopped), a dimmed "working…" while the model is awaited and
the context meter ("context: 72k of 200k tokens (36%)") show on stderr. Every step is
saved as in myco -p, so a session can be continued later with --resume ID.

A tool call that needs your approval asks on this prompt: y allows it once, a always
(adding the rule it shows to the session), n with an optional reason denies it.

Commands:
  /help              this text
  /model [KEY]       list the catalog's models, or use KEY from the next turn on
  /status            the session, its model, the context meter, busy or idle, the hosts,
                     the MCP servers
  /mode [MODE]       the session's approval mode, or change it: read-only, ask,
                     workspace or full (docs/security.md)
  /compact           summarise the conversation into a successor thread (tools stay)
  /diff [all]        the files the last turn changed, with their diffs (all: the
                     whole session's, against the files as they are now)
  /undo [redo] [force]  put back the files the last turn changed (redo: its changes
                     again); a file changed since is listed and left alone (force:
                     overwrite it)
  /new               start a new session with the next message (releases this one's tools)
  /resume ID         switch to a saved session (an earlier process's tools are gone)
  /sessions [TEXT]   this profile's sessions, newest first, archived ones marked;
                     TEXT keeps those whose title or id contains it
  /archive [ID]      archive this session (or ID): hidden from browsing, still usable
  /restore [ID]      bring an archived session back
  /quit, /exit       end the chat

Keys (when standard input and standard error are a terminal):
  ← → Home End, Ctrl-A Ctrl-E, Ctrl-W Ctrl-U Ctrl-K   edit the line
  ↑ ↓                recall earlier messages, of this run and of earlier ones (not sent
                     until Enter)
  \ at the end       continue the message on the next line
  paste              a pasted block is one message, its line breaks shown as ␤ and
                     its tabs as ⇥; Enter sends it
  Ctrl-C             during a turn: stop it (a stopped turn is final; the calls it cut
                     show unknown outcomes); at the prompt: drop the line; twice: quit
  Ctrl-D             quit (on an empty line)

Closing the terminal (SIGHUP) or SIGTERM stops the turn, saves it and ends the chat.
With colour, the answer's Markdown is styled (headings and **strong** bold, code green).
On a terminal its tables are laid out in columns fitted to the terminal's width.
Colour is off when stdout or stderr is not a terminal, NO_COLOR is set, or TERM is unset
or dumb.
`

// quitHint is what the first Ctrl-C at the prompt says.
const quitHint = "press Ctrl-C again or Ctrl-D to quit"

// Chat runs myco --mode cli: read a message, run it as a turn on the durable session (a new
// one with the first message, or o.Resume), print the answer as it streams, and repeat
// until the user quits or input ends. Ctrl-C stops a turn and the chat goes on; SIGTERM and
// SIGHUP stop the turn and end the chat with the signal's status.
func Chat(ctx context.Context, svc *sessions.Manager, std IO, o Options) int {
	t := newTerminal(svc, std, false, true)
	defer t.close()
	t.chat = true
	t.out.mcp = o.MCP
	c := &chatSession{t: t, o: o, model: o.Model}
	defer c.close()
	if o.Resume != "" {
		if err := c.open(ctx, o.Resume, o.Model); err != nil {
			return t.fail(err)
		}
	}
	in := c.input()
	defer in.close()
	t.ask = c.askInline(in)
	t.out.color = c.color()
	t.out.note("model %s · /help for commands · Ctrl-D to quit", c.currentModel(ctx))
	if o.Project != nil && o.Dir != "" {
		for _, line := range projectNote(o.Project.Project(o.Dir)) {
			t.out.note("%s", line)
		}
	}

	armed := false // Ctrl-C was pressed at the prompt: a second one ends the chat
	for {
		r, status, end := c.await(in, &armed)
		if end {
			return status
		}
		switch {
		case errors.Is(r.err, lineedit.ErrInterrupted):
			if armed {
				return ExitOK
			}
			armed = true
			t.out.note(quitHint)
			continue
		case errors.Is(r.err, io.EOF):
			return ExitOK
		case r.err != nil:
			t.out.failed(fmt.Errorf("read standard input: %w", r.err))
			return ExitError
		}
		armed = false
		if r.warn != "" {
			t.out.note("myco: %s", r.warn)
		}
		text := r.text
		if strings.TrimSpace(text) == "" {
			continue
		}
		if cmd, ok := strings.CutPrefix(strings.TrimSpace(text), "/"); ok {
			if quit := c.command(ctx, cmd); quit {
				return ExitOK
			}
		} else {
			c.turn(ctx, text)
		}
		if t.signalled != 0 && t.signalled != exitStatus(syscall.SIGINT) {
			return t.signalled // the terminal closed or the process was told to end
		}
	}
}

// await waits for the next message. A signal ends the chat (end reports it, with the exit
// status), but for SIGINT at a line editor's prompt, which counts as a Ctrl-C there (it
// may come from a Ctrl-C meant for a turn that had just ended).
func (c *chatSession) await(in chatInput, armed *bool) (r inputResult, status int, end bool) {
	ch := in.next()
	for {
		select {
		case s := <-c.t.sig:
			if s == os.Interrupt && in.interactive() {
				if *armed {
					return r, ExitOK, true
				}
				*armed = true
				in.note(quitHint)
				continue
			}
			return r, exitStatus(s), true
		case r = <-ch:
			return r, 0, false
		}
	}
}

// turn runs text as a turn on the current session (a new one if there is none) and prints
// how it ended, then the context meter.
func (c *chatSession) turn(ctx context.Context, text string) {
	t := c.t
	if c.id == "" {
		if err := c.create(ctx); err != nil {
			t.out.failed(err)
			return
		}
	}
	t.out.working()
	defer t.out.idle()
	res, err := t.run(ctx, c.id, func() (*sessions.Job, error) {
		return t.svc.Submit(ctx, c.id, model.TextPart(text))
	})
	switch {
	case errors.Is(err, sessions.ErrStopped):
		t.out.interrupted()
		return
	case err != nil:
		t.out.turnFailed(err)
		return
	}
	t.out.done(res)
	if m, err := c.meter(ctx); err == nil {
		t.out.meter(m.used, m.window, m.cost)
	}
}

// chatSession is the chat's current session: none until the first message (so opening
// and leaving the chat leaves no empty session behind), or one resumed.
type chatSession struct {
	t     *terminal
	o     Options
	model string // the model of the sessions the chat creates: --model, or /model's
	id    string
}

// create starts a new session as the current one.
func (c *chatSession) create(ctx context.Context) error {
	id, err := c.t.svc.Create(ctx, sessions.CreateOptions{Model: c.model})
	if err != nil {
		return err
	}
	c.close()
	c.id = id
	c.t.out.session(id)
	return nil
}

// open makes saved session id the current one, with model key when not empty, releasing
// the previous one's tools; on error the current session stays.
func (c *chatSession) open(ctx context.Context, id, key string) error {
	if _, _, err := c.t.svc.Snapshot(ctx, id); err != nil {
		return err
	}
	if key != "" {
		if err := c.t.svc.SelectModel(ctx, id, key); err != nil {
			return err
		}
	}
	if id != c.id {
		c.close()
	}
	c.id = id
	c.t.out.session(id)
	return nil
}

// close releases the current session's tools.
func (c *chatSession) close() {
	if c.id != "" {
		c.t.svc.CloseSession(c.id)
		c.id = ""
	}
}

// askInline asks the person about a call that waits for approval, on the chat's input: y
// allows it once, a always (adding the rule it names), n with an optional reason denies it.
// Ctrl-C or the end of input leaves it unanswered (the page and the API can still answer).
func (c *chatSession) askInline(in chatInput) func(a sessions.Approval) (sessions.Answer, bool) {
	return func(a sessions.Approval) (sessions.Answer, bool) {
		always := ""
		if a.Rule != "" {
			always = ", a = always (" + termtext.Safe(a.Rule) + ")"
		}
		for {
			in.note(fmt.Sprintf("? allow %s: %s — y = once%s, n [reason] = deny", termtext.Safe(a.Tool), termtext.Safe(approvalSubject(&a)), always))
			var r inputResult
			select {
			case r = <-in.next():
			case <-c.t.sig:
				return sessions.Answer{}, false
			}
			if r.err != nil {
				return sessions.Answer{}, false
			}
			word, reason, _ := strings.Cut(strings.TrimSpace(r.text), " ")
			switch strings.ToLower(word) {
			case "y", "yes":
				return sessions.Answer{Approval: a.ID, Allow: true}, true
			case "a", "always":
				if a.Rule != "" {
					return sessions.Answer{Approval: a.ID, Allow: true, Always: true}, true
				}
			case "n", "no":
				return sessions.Answer{Approval: a.ID, Reason: strings.TrimSpace(reason)}, true
			}
		}
	}
}
