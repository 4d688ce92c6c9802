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

	"myco.dev/agent/model"
	"myco.dev/sessions"
)

// oneShot runs `myco -p`: one turn on a new durable session, or on a saved one with
// --resume.
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
	return a.withSession(o, o.resume, func(t *terminal, id string) int {
		res, err := t.run(id, func() (*sessions.Job, error) {
			return t.e.mgr.Submit(context.Background(), id, model.TextPart(prompt))
		})
		return t.report(res, err)
	})
}

// compactCmd runs myco --compact ID: summarise the session's active thread into a
// successor thread, from the shell.
func (a *app) compactCmd(o options) int {
	return a.withSession(o, o.compact, func(t *terminal, id string) int {
		t.out.compactResult = true // the session's compacted update is the result, printed once
		_, err := t.run(id, func() (*sessions.Job, error) { return t.e.mgr.Compact(context.Background(), id) })
		switch {
		case errors.Is(err, sessions.ErrStopped):
			return t.stopped()
		case err != nil:
			return a.fail(err)
		}
		return exitOK
	})
}

// withSession resolves the profile, builds its session service, opens session id (a new
// one when id is empty), announces it on stderr, and runs f. SIGINT, SIGTERM and SIGHUP
// stop the session's job (a second one kills the process the usual way); the service
// then checkpoints and releases the tools before the process exits.
func (a *app) withSession(o options, id string, f func(t *terminal, id string) int) int {
	t, err := a.newTerminal(o, false)
	if err != nil {
		return a.fail(err)
	}
	defer t.close()
	ctx := context.Background()
	if id == "" {
		id, err = t.e.mgr.Create(ctx, sessions.CreateOptions{Model: o.model})
	} else if o.model != "" {
		err = t.e.mgr.SelectModel(ctx, id, o.model)
	} else {
		_, _, err = t.e.mgr.Snapshot(ctx, id)
	}
	if err != nil {
		return a.fail(err)
	}
	t.out.session(id)
	return f(t, id)
}

// terminal is a terminal front end on the session service: a printer for its updates and
// the signals that stop its jobs.
type terminal struct {
	a   *app
	p   *profile
	e   *engine
	out *printer
	sig chan os.Signal
	// chat keeps handling signals after the first (Ctrl-C stops a turn and the chat goes
	// on); otherwise the first one restores the default action, so a second one ends the
	// process at once.
	chat bool
	// signalled is the exit status of the last signal that stopped a job, 0 for none.
	signalled int
}

// newTerminal resolves the profile and builds its service for a terminal front end.
func (a *app) newTerminal(o options, stream bool) (*terminal, error) {
	p, err := a.setup(o)
	if err != nil {
		return nil, err
	}
	out := newPrinter(a.stdout, a.stderr, o.json)
	out.stream = stream
	e, err := a.newEngine(p, true)
	if err != nil {
		return nil, err
	}
	t := &terminal{a: a, p: p, e: e, out: out, sig: make(chan os.Signal, 1)}
	signal.Notify(t.sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	// A write to a closed stdout returns EPIPE, reported as an error, instead of killing
	// the process before it saved and said what happened.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return t, nil
}

func (t *terminal) close() {
	signal.Stop(t.sig)
	t.e.close()
}

// run starts a job on session id and prints the session's updates until it ends. A signal
// stops the job and is recorded in t.signalled.
func (t *terminal) run(id string, start func() (*sessions.Job, error)) (sessions.JobResult, error) {
	sub := t.e.mgr.Subscribe([]string{id}, "")
	defer sub.Close()
	j, err := start()
	if err != nil {
		return sessions.JobResult{}, err
	}
	printed := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer close(printed)
		for {
			us, err := sub.Next(ctx)
			if err != nil {
				return
			}
			for _, u := range us {
				t.out.update(u)
				if u.Session == id && u.Terminal() {
					return
				}
			}
		}
	}()
	t.signalled = 0
	for done := false; !done; {
		select {
		case s := <-t.sig:
			if t.signalled == 0 && !t.chat {
				signal.Reset(s)
			}
			t.signalled = exitStatus(s)
			t.e.mgr.Stop(id)
		case <-j.Done():
			done = true
		}
	}
	<-printed
	return j.Wait(context.Background())
}

// exitStatus is the status of a process ended by signal s: 128 + its number, the shell's
// convention (130 for SIGINT).
func exitStatus(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return exitInterrupt
}

// stopped says that a signal stopped the job and returns the exit status: the signal's.
func (t *terminal) stopped() int {
	t.out.interrupted()
	if t.signalled != 0 {
		return t.signalled
	}
	return exitInterrupt
}

// report prints how a turn ended and returns the exit status.
func (t *terminal) report(res sessions.JobResult, err error) int {
	switch {
	case errors.Is(err, sessions.ErrStopped):
		return t.stopped()
	case err != nil:
		t.out.failed(err)
		return exitError
	}
	t.out.done(res.Result)
	if werr := t.out.err(); werr != nil {
		t.out.note("myco: the answer could not be written to standard output: %s (it is saved in the session)", werr)
		return exitError
	}
	if res.CapReached {
		return exitError
	}
	return exitOK
}
