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
  /new            start a new session (the tools of the current one are released)
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

	d, err := openDurable(context.Background(), p, out, o.resume)
	if err != nil {
		return a.fail(err)
	}
	defer func() { d.close() }()
	out.session(d.id())
	out.note("model %s · /help for commands · Ctrl-D to quit", p.model.Key)

	lines := readLines(a.stdin)
	for {
		fmt.Fprint(a.stderr, "> ")
		var text string
		select {
		case <-sig:
			fmt.Fprintln(a.stderr)
			return exitInterrupt
		case l, ok := <-lines:
			if !ok {
				fmt.Fprintln(a.stderr)
				return exitOK
			}
			text = l
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		if cmd, ok := strings.CutPrefix(strings.TrimSpace(text), "/"); ok {
			next, quit := a.chatCommand(p, d, out, sig, cmd)
			if quit {
				return exitOK
			}
			d = next
			continue
		}
		err := interruptibleBy(sig, func(ctx context.Context) error {
			res, err := d.turn(ctx, text)
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

// chatCommand runs one slash command and returns the session to go on with, or quit.
func (a *app) chatCommand(p *profile, d *durable, out *printer, sig <-chan os.Signal, cmd string) (next *durable, quit bool) {
	name, arg, _ := strings.Cut(cmd, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "quit", "exit":
		return d, true
	case "help":
		fmt.Fprint(a.stderr, chatHelp)
	case "compact":
		err := interruptibleBy(sig, func(ctx context.Context) error {
			c, err := d.runner.Compact(ctx)
			if err == nil {
				out.note("compacted thread %s into %s", c.From, c.To)
			}
			return err
		})
		if err != nil {
			out.failed(err)
		}
	case "new", "resume":
		if name == "resume" && arg == "" {
			out.note("myco: /resume needs a session id (see /sessions)")
			return d, false
		}
		if name == "new" {
			arg = ""
		}
		nd, err := openDurable(context.Background(), p, out, arg)
		if err != nil {
			out.failed(err)
			return d, false
		}
		d.close()
		out.session(nd.id())
		return nd, false
	case "sessions":
		list, err := d.store.List(context.Background())
		if err != nil {
			out.failed(err)
			return d, false
		}
		for _, s := range list {
			if s.Hidden {
				continue
			}
			mark := ""
			if s.ID == d.id() {
				mark = " (this one)"
			}
			out.note("%s  %s%s", s.ID, s.Title, mark)
		}
	default:
		out.note("myco: unknown command /%s (see /help)", name)
	}
	return d, false
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
