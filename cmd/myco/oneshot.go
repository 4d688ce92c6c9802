package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// errInterrupted is the cancel cause of a turn stopped by SIGINT.
var errInterrupted = errors.New("interrupted")

// oneShot runs `myco -p`: one turn on a new durable session.
func (a *app) oneShot(o options) int {
	prompt := o.prompt
	if prompt == "-" {
		b, err := io.ReadAll(a.stdin)
		if err != nil {
			return a.fail(fmt.Errorf("read the prompt from standard input: %w", err))
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		fmt.Fprintln(a.stderr, "myco: the prompt is empty")
		return exitUsage
	}
	return a.withSession(o, o.resume, func(ctx context.Context, d *durable, out *printer) int {
		return a.runTurn(ctx, d, out, prompt)
	})
}

// runTurn submits one prompt and reports how it ended.
func (a *app) runTurn(ctx context.Context, d *durable, out *printer, prompt string) int {
	res, err := d.turn(ctx, prompt)
	switch {
	case errors.Is(err, errInterrupted):
		out.interrupted()
		return exitInterrupt
	case err != nil:
		out.failed(err)
		return exitError
	}
	out.done(res)
	if res.CapReached {
		return exitError
	}
	return exitOK
}

// title derives a session title from the first prompt: its first line, bounded.
func title(prompt string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	if r := []rune(line); len(r) > 80 {
		line = string(r[:79]) + "…"
	}
	return line
}

// interruptible returns a context that SIGINT or SIGTERM cancels with errInterrupted. A
// second signal kills the process the usual way. Call the cancel func when done.
func interruptible() (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sig:
			cancel(errInterrupted)
		case <-ctx.Done():
		}
		signal.Stop(sig)
	}()
	return ctx, cancel
}
