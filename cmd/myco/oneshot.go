package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"myco/agent"
	"myco/agent/model"
	"myco/sessions"
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
	p, err := a.setup(o)
	if err != nil {
		return a.fail(err)
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		select {
		case <-sig:
			signal.Stop(sig) // a second Ctrl-C kills the process the usual way
			cancel(errInterrupted)
		case <-ctx.Done():
		}
	}()

	out := newPrinter(a.stdout, a.stderr, o.json)
	rt, err := newRuntime(ctx, p, out)
	if err != nil {
		return a.fail(err)
	}
	defer rt.close()
	out.session(rt.sess.ID)

	res, err := rt.turn(ctx, prompt)
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

// sessionRuntime binds one session to the harness and its tool owner for the life of the process.
type sessionRuntime struct {
	p     *profile
	store *sessions.Store
	sess  *sessions.Session
	tools *toolset
	out   *printer

	persisted int // messages of the latest thread already on disk

	mu       sync.Mutex  // guards the fields below
	usage    model.Usage // the latest usage report, saved with the next checkpoint
	usageSet bool
}

func newRuntime(ctx context.Context, p *profile, out *printer) (*sessionRuntime, error) {
	store := sessions.NewStore(p.paths.SessionDir())
	now := time.Now()
	sess := &sessions.Session{ID: sessions.NewID(now), Created: now, Model: p.model.Key}
	if err := store.Create(ctx, sess); err != nil {
		return nil, err
	}
	ts, err := newToolset(p, sess.ID+"/rt-"+fmt.Sprint(os.Getpid()))
	if err != nil {
		return nil, err
	}
	return &sessionRuntime{p: p, store: store, sess: sess, tools: ts, out: out}, nil
}

func (rt *sessionRuntime) close() { rt.tools.close() }

// turn accepts one user input durably, then runs the agent on it.
func (rt *sessionRuntime) turn(ctx context.Context, text string) (agent.Result, error) {
	th := rt.sess.Latest()
	now := time.Now().UTC()
	input := sessions.Entry{Message: model.Message{Role: model.User, Parts: []model.Part{model.TextPart(text)}}, AcceptedAt: &now}
	if err := rt.store.Append(ctx, rt.sess, th, input); err != nil {
		return agent.Result{}, err
	}
	if rt.sess.Title == "" {
		rt.sess.Title = title(text)
		if err := rt.store.SaveMeta(ctx, rt.sess); err != nil {
			return agent.Result{}, err
		}
	}
	rt.persisted = len(th.Entries)
	m := rt.p.model
	ag := agent.New(agent.Options{
		Model:               rt.p.client,
		Tools:               rt.tools.exec,
		APIModel:            m.APIID,
		MaxOutputTokens:     m.MaxOutputTokens,
		Thinking:            m.Thinking,
		System:              rt.tools.systemPrompt(m),
		MaxTruncatedResumes: m.MaxTruncatedResumes,
		Sink:                rt.sink,
		Checkpoint:          rt.checkpoint,
	})
	_, res, err := ag.Run(ctx, th.Messages())
	return res, err
}

// sink forwards agent events to the printer and keeps the latest usage report.
func (rt *sessionRuntime) sink(ev agent.Event) {
	if s, ok := ev.(agent.StepDone); ok {
		rt.mu.Lock()
		rt.usage, rt.usageSet = s.Usage, true
		rt.mu.Unlock()
	}
	rt.out.event(ev)
}

// checkpoint appends what the agent added since the last checkpoint. A history shorter
// than what is on disk is a stale checkpoint and is refused.
func (rt *sessionRuntime) checkpoint(ctx context.Context, history []model.Message) error {
	th := rt.sess.Latest()
	if len(history) < rt.persisted {
		return fmt.Errorf("stale checkpoint: %d messages, %d already saved", len(history), rt.persisted)
	}
	entries := make([]sessions.Entry, 0, len(history)-rt.persisted)
	for _, m := range history[rt.persisted:] {
		entries = append(entries, sessions.Entry{Message: m})
	}
	if err := rt.store.Append(ctx, rt.sess, th, entries...); err != nil {
		return err
	}
	rt.persisted = len(history)
	rt.mu.Lock()
	u, set := rt.usage, rt.usageSet
	rt.usageSet = false
	rt.mu.Unlock()
	if set {
		return rt.store.SetUsage(ctx, rt.sess, th, u)
	}
	return nil
}

// title derives a session title from the first prompt: its first line, bounded.
func title(prompt string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	if r := []rune(line); len(r) > 80 {
		line = string(r[:79]) + "…"
	}
	return line
}
