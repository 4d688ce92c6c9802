package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

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
outcomes) and, at the prompt, ends the chat. Ctrl-D ends it too.

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
	p, err := a.setup(o)
	if err != nil {
		return a.fail(err)
	}
	out := newPrinter(a.stdout, a.stderr, false)
	out.stream = true
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)

	c := &chatSession{p: p, out: out}
	defer c.close()
	if o.resume != "" {
		if err := c.open(o.resume); err != nil {
			return a.fail(err)
		}
	}
	out.note("model %s · /help for commands · Ctrl-D to quit", p.model.Key)

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
		case <-sig:
			if prompt != "" {
				fmt.Fprintln(a.stderr)
			}
			return exitInterrupt
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
			if quit := a.chatCommand(c, sig, cmd); quit {
				return exitOK
			}
			continue
		}
		if c.d == nil {
			if err := c.open(""); err != nil {
				out.failed(err)
				continue
			}
		}
		err := interruptibleBy(sig, func(ctx context.Context) error {
			res, err := c.d.turn(ctx, text)
			if err == nil {
				out.done(res)
			}
			return err
		})
		switch {
		case errors.Is(err, errInterrupted):
			out.interrupted()
		case err != nil:
			out.failed(err)
		}
	}
}

// chatSession is the chat's current durable session: none until the first message (so
// opening and leaving the chat leaves no empty session behind), or one resumed.
type chatSession struct {
	p   *profile
	out *printer
	d   *durable
}

// open makes session id (a new one when empty) the current one, releasing the previous
// one's tools; on error the current session stays.
func (c *chatSession) open(id string) error {
	d, err := openDurable(context.Background(), c.p, c.out, id)
	if err != nil {
		return err
	}
	c.close()
	c.d = d
	c.out.session(d.id())
	return nil
}

func (c *chatSession) close() {
	if c.d != nil {
		c.d.close()
		c.d = nil
	}
}

// chatCommand runs one slash command and reports whether the chat should end.
func (a *app) chatCommand(c *chatSession, sig <-chan os.Signal, cmd string) (quit bool) {
	out := c.out
	name, arg, _ := strings.Cut(cmd, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "quit", "exit":
		return true
	case "help":
		fmt.Fprint(a.stderr, chatHelp)
	case "compact":
		if c.d == nil {
			out.note("myco: nothing to compact yet")
			return false
		}
		// The session's sink reports the new thread.
		err := interruptibleBy(sig, func(ctx context.Context) error {
			_, err := c.d.runner.Compact(ctx)
			return err
		})
		if err != nil {
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
		list, err := sessions.NewStore(c.p.paths.SessionDir()).List(context.Background())
		if err != nil {
			out.failed(err)
			return false
		}
		for _, s := range list {
			if s.Hidden {
				continue
			}
			mark := ""
			if c.d != nil && s.ID == c.d.id() {
				mark = " (this one)"
			}
			out.note("%s  %s%s", s.ID, s.Title, mark)
		}
		if len(list) == 0 {
			out.note("no sessions yet")
		}
	default:
		out.note("myco: unknown command /%s (see /help)", name)
	}
	return false
}

// interruptibleBy runs f under a context that the next signal on sig cancels with
// errInterrupted.
func interruptibleBy(sig <-chan os.Signal, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-sig:
			cancel(errInterrupted)
		case <-stop:
		}
	}()
	return f(ctx)
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
