package main

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
	"myco.dev/sessions"
)

const chatHelp = `myco --mode cli: a scrolling terminal chat on a durable session

Usage:
  myco --mode cli [--model KEY] [--profile NAME]   chat on a new session
  myco --mode cli --resume ID [--model KEY]        continue a saved session

Type a message and press Enter. The answer streams to stdout; thinking (folded to one
line), tool calls (with their host), a dimmed "working…" while the model is awaited and
the context meter USER n/m show on stderr. Every
step is saved as in myco -p, so a session can be continued later with --resume ID.

Commands:
  /help              this text
  /model [KEY]       list the catalog's models, or use KEY from the next turn on
  /status            the session, its model, the context meter, busy or idle, the hosts
  /compact           summarise the conversation into a successor thread (tools stay)
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
Colour is off when stdout or stderr is not a terminal, NO_COLOR is set, or TERM is unset
or dumb.
`

// quitHint is what the first Ctrl-C at the prompt says.
const quitHint = "press Ctrl-C again or Ctrl-D to quit"

// chat runs myco --mode cli: read a message, run it as a turn on the durable session,
// print the answer as it streams, and repeat until the user quits or input ends.
func (a *app) chat(o options) int {
	if o.json {
		fmt.Fprintln(a.stderr, "myco: --json goes with -p, not with --mode cli")
		return exitUsage
	}
	t, err := a.newTerminal(o, true)
	if err != nil {
		return a.fail(err)
	}
	defer t.close()
	t.chat = true
	c := &chatSession{t: t, model: o.model}
	defer c.close()
	if o.resume != "" {
		if err := c.open(o.resume, o.model); err != nil {
			return a.fail(err)
		}
	}
	in := a.chatInput(t)
	defer in.close()
	t.out.color = a.chatColor()
	t.out.note("model %s · /help for commands · Ctrl-D to quit", c.currentModel())

	armed := false // Ctrl-C was pressed at the prompt: a second one ends the chat
	for {
		r, status, end := c.await(in, &armed)
		if end {
			return status
		}
		switch {
		case errors.Is(r.err, lineedit.ErrInterrupted):
			if armed {
				return exitOK
			}
			armed = true
			t.out.note(quitHint)
			continue
		case errors.Is(r.err, io.EOF):
			return exitOK
		case r.err != nil:
			t.out.failed(fmt.Errorf("read standard input: %w", r.err))
			return exitError
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
			if quit := a.chatCommand(c, cmd); quit {
				return exitOK
			}
		} else {
			c.turn(text)
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
					return r, exitOK, true
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
func (c *chatSession) turn(text string) {
	t := c.t
	if c.id == "" {
		if err := c.create(); err != nil {
			t.out.failed(err)
			return
		}
	}
	t.out.working()
	defer t.out.idle()
	res, err := t.run(c.id, func() (*sessions.Job, error) {
		return t.e.mgr.Submit(context.Background(), c.id, model.TextPart(text))
	})
	switch {
	case errors.Is(err, sessions.ErrStopped):
		t.out.interrupted()
		return
	case err != nil:
		t.out.failed(err)
		return
	}
	t.out.done(res.Result)
	if m, err := c.meter(); err == nil {
		t.out.meter(m.used, m.window)
	}
}

// chatSession is the chat's current session: none until the first message (so opening
// and leaving the chat leaves no empty session behind), or one resumed.
type chatSession struct {
	t     *terminal
	model string // the model of the sessions the chat creates: --model, or /model's
	id    string
}

// create starts a new session as the current one.
func (c *chatSession) create() error {
	id, err := c.t.e.mgr.Create(context.Background(), sessions.CreateOptions{Model: c.model})
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
func (c *chatSession) open(id, key string) error {
	ctx := context.Background()
	if _, _, err := c.t.e.mgr.Snapshot(ctx, id); err != nil {
		return err
	}
	if key != "" {
		if err := c.t.e.mgr.SelectModel(ctx, id, key); err != nil {
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
		c.t.e.mgr.CloseSession(c.id)
		c.id = ""
	}
}
