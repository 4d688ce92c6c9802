package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"myco/agent/model"
	"myco/internal/termtext"
	"myco/sessions"
)

const chatHelp = `myco --mode cli: a scrolling terminal chat on a durable session

Usage:
  myco --mode cli [--model KEY] [--profile NAME]   chat on a new session
  myco --mode cli --resume ID                      continue a saved session

Type a message and press Enter; end a line with \ to continue it on the next one. The
answer streams to stdout, tool calls show as short lines on stderr. Every step is saved
as in myco -p, so a session can be continued later with --resume ID.

Ctrl-C stops the turn in progress (a stopped turn is final; the calls it cut show unknown
outcomes) and, at the prompt, ends the chat. Ctrl-D ends it too. Closing the terminal
(SIGHUP) or SIGTERM stops the turn, saves it and ends the chat.

Commands:
  /help           this text
  /compact        summarise the conversation into a successor thread (live tools stay)
  /new            start a new session with the next message (the current one's tools are released)
  /resume ID      switch to a saved session (live tools of an earlier process are not restored)
  /sessions       list this profile's sessions, newest first
  /quit, /exit    end the chat
`

// chat runs myco --mode cli: read a line, run it as a turn on the durable session, print
// the answer as it streams, and repeat until end of input.
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
		if err := c.open(o.resume); err != nil {
			return a.fail(err)
		}
	}
	t.out.note("model %s · /help for commands · Ctrl-D to quit", t.e.mgr.Models().Default())

	lines := readLines(a.stdin)
	prompt := "" // none when the input is not typed: no echo would end the line
	if f, ok := a.stdin.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			prompt = "> "
		}
	}
	for {
		fmt.Fprint(a.stderr, prompt)
		var text string
		select {
		case s := <-t.sig:
			if prompt != "" {
				fmt.Fprintln(a.stderr)
			}
			return exitStatus(s)
		case l, ok := <-lines:
			if !ok {
				if prompt != "" {
					fmt.Fprintln(a.stderr)
				}
				return exitOK
			}
			text = l
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		if cmd, ok := strings.CutPrefix(strings.TrimSpace(text), "/"); ok {
			if quit := a.chatCommand(c, cmd); quit {
				return exitOK
			}
		} else if c.id == "" {
			if err := c.create(); err != nil {
				t.out.failed(err)
				continue
			}
		}
		if !strings.HasPrefix(strings.TrimSpace(text), "/") {
			res, err := t.run(c.id, func() (*sessions.Job, error) {
				return t.e.mgr.Submit(context.Background(), c.id, model.TextPart(text))
			})
			switch {
			case errors.Is(err, sessions.ErrStopped):
				t.out.interrupted()
			case err != nil:
				t.out.failed(err)
			default:
				t.out.done(res.Result)
			}
		}
		if t.signalled != 0 && t.signalled != exitStatus(syscall.SIGINT) {
			return t.signalled // the terminal closed or the process was told to end
		}
	}
}

// chatSession is the chat's current session: none until the first message (so opening
// and leaving the chat leaves no empty session behind), or one resumed.
type chatSession struct {
	t     *terminal
	model string // --model, for the sessions the chat creates
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

// open makes saved session id the current one, releasing the previous one's tools; on
// error the current session stays.
func (c *chatSession) open(id string) error {
	ctx := context.Background()
	if _, _, err := c.t.e.mgr.Snapshot(ctx, id); err != nil {
		return err
	}
	if c.model != "" {
		if err := c.t.e.mgr.SelectModel(ctx, id, c.model); err != nil {
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

// chatCommand runs one slash command and reports whether the chat should end.
func (a *app) chatCommand(c *chatSession, cmd string) (quit bool) {
	t := c.t
	out := t.out
	name, arg, _ := strings.Cut(cmd, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "quit", "exit":
		return true
	case "help":
		fmt.Fprint(a.stderr, chatHelp)
	case "compact":
		if c.id == "" {
			out.note("myco: nothing to compact yet")
			return false
		}
		// The session's updates report the new thread.
		_, err := t.run(c.id, func() (*sessions.Job, error) { return t.e.mgr.Compact(context.Background(), c.id) })
		switch {
		case errors.Is(err, sessions.ErrStopped):
			out.interrupted()
		case err != nil:
			out.failed(err)
		}
	case "new":
		c.close()
		out.note("a new session starts with your next message")
	case "resume":
		if arg == "" {
			out.note("myco: /resume needs a session id (see /sessions)")
			return false
		}
		if err := c.open(arg); err != nil {
			out.failed(err)
		}
	case "sessions":
		list, err := t.e.mgr.List(context.Background(), sessions.ListOptions{})
		if err != nil {
			out.failed(err)
			return false
		}
		for _, s := range list {
			mark := ""
			if s.ID == c.id {
				mark = " (this one)"
			}
			out.note("%s  %s%s", s.ID, s.Title, mark)
		}
		if len(list) == 0 {
			out.note("no sessions yet")
		}
	default:
		out.note("myco: unknown command /%s (see /help)", termtext.Safe(name))
	}
	return false
}

// readLines delivers the lines of r, joining a line that ends with a backslash to the
// next, and closes the channel at end of input. The reader goroutine lives until r ends or
// the process exits.
func readLines(r interface{ Read([]byte) (int, error) }) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		var cur strings.Builder
		for sc.Scan() {
			line := sc.Text()
			if strings.HasSuffix(line, `\`) {
				cur.WriteString(strings.TrimSuffix(line, `\`))
				cur.WriteString("\n")
				continue
			}
			cur.WriteString(line)
			ch <- cur.String()
			cur.Reset()
		}
		if cur.Len() > 0 {
			ch <- cur.String()
		}
	}()
	return ch
}
